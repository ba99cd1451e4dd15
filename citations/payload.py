"""The retrieval-traceability citation payload issued for every retrieved unit."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from documents.models import Chunk

REQUIRED_FIELDS = (
    "doc_id",
    "section_id",
    "snippet_id",
    "source_url",
    "offsets",
    "tokens",
    "index_hash",
    "embed_model",
    "analyzer",
    "rev",
)


def revision_label(revision: int, sha256: str) -> str:
    """``rev``: the file revision and the first 12 hex digits of its sha256."""
    return f"{revision}:{sha256[:12]}"


def citation_payload(
    *,
    chunk: Chunk,
    index_hash: str,
    embed_model: str,
    analyzer: str,
    score_raw: float,
    score_norm: float,
    k_pos: int,
    k_final: int | None,
    rerank_score: float | None = None,
) -> dict[str, Any]:
    """The portable citation for one chunk as retrieved by one query."""
    file = chunk.file
    return {
        "doc_id": str(file.document_id),
        "section_id": chunk.section,
        "snippet_id": str(chunk.pk),
        "source_url": reverse("chunk-detail", args=[chunk.vector_database_id, chunk.pk]),
        "offsets": {"start": chunk.char_start, "end": chunk.char_end, "unit": "char"},
        "tokens": chunk.token_count,
        "index_hash": index_hash,
        "embed_model": embed_model,
        "analyzer": analyzer,
        "rev": revision_label(file.revision, file.sha256),
        "page": chunk.page_start,
        "score_raw": round(score_raw, 6),
        "score_norm": round(score_norm, 6),
        "rerank_score": rerank_score,
        "k_pos": k_pos,
        "k_final": k_final,
    }
