"""The retrieval-traceability citation payload issued for every retrieved unit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import Q
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


@dataclass(frozen=True)
class Window:
    """``window``, the seed's "pre and post context sizes": how many of the snippet's
    first characters the previous chunk of its Markdown holds too (``pre``), and how
    many of its last the next one does (``post``). Consecutive chunks of a section
    share up to the chunker's overlap (documents/chunking.py), so a snippet's span is
    its context before, its own text, its context after; counted in the offsets' unit
    (characters), 0 where a neighbour shares nothing (a section's first or last chunk)."""

    pre: int = 0
    post: int = 0

    def as_json(self) -> dict[str, int]:
        return {"pre": self.pre, "post": self.post}


def snippet_windows(chunks: Sequence[Chunk]) -> dict[UUID, Window]:
    """Each chunk's window, from its neighbours' spans in the same Markdown (one query)."""
    if not chunks:
        return {}
    near = Q()
    for chunk in chunks:
        near |= Q(
            markdown_id=chunk.markdown_id, position__in=(chunk.position - 1, chunk.position + 1)
        )
    spans = {
        (markdown_id, position): (start, end)
        for markdown_id, position, start, end in Chunk.objects.filter(near).values_list(
            "markdown_id", "position", "char_start", "char_end"
        )
    }
    return {chunk.pk: _window(chunk, spans) for chunk in chunks}


def _window(chunk: Chunk, spans: dict[tuple[UUID, int], tuple[int, int]]) -> Window:
    start, end = chunk.char_start, chunk.char_end
    before = spans.get((chunk.markdown_id, chunk.position - 1))
    after = spans.get((chunk.markdown_id, chunk.position + 1))
    pre = max(0, min(before[1], end) - start) if before else 0
    post = max(0, end - max(after[0], start)) if after else 0
    return Window(pre=pre, post=post)


def source_url(chunk: Chunk, base_url: str) -> str:
    """The chunk endpoint's absolute URL on ``base_url`` (an http(s) origin): the
    request's, or the configured public URL without one."""
    return base_url.rstrip("/") + reverse("chunk-detail", args=[chunk.vector_database_id, chunk.pk])


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
    window: Window,
    base_url: str,
    rerank_score: float | None = None,
) -> dict[str, Any]:
    """The portable citation for one chunk as retrieved by one query."""
    file = chunk.file
    return {
        "doc_id": str(file.document_id),
        "section_id": chunk.section,
        "snippet_id": str(chunk.pk),
        "source_url": source_url(chunk, base_url),
        "offsets": {"start": chunk.char_start, "end": chunk.char_end, "unit": "char"},
        "tokens": chunk.token_count,
        "index_hash": index_hash,
        "embed_model": embed_model,
        "analyzer": analyzer,
        "rev": revision_label(file.revision, file.sha256),
        "window": window.as_json(),
        "page": chunk.page_start,
        "score_raw": round(score_raw, 6),
        "score_norm": round(score_norm, 6),
        "rerank_score": rerank_score,
        "k_pos": k_pos,
        "k_final": k_final,
    }
