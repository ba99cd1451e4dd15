"""The cot-source-attribution document's schemas and service, as it names them:
``SourceAttribution`` (one source of one step), ``SourceSummary`` (the sources of
every step, deduplicated by document), the ``ReasoningStep`` they attach to and
``SourceAttributionService``. Stored steps are read into these by
:mod:`citations.reasoning.selectors`; the pipeline builds each step's attributions
with the service, so the REST output is exactly the document's shape."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

EXCERPT_CHARS = 200  # "First 200 characters of relevant content"
PRIMARY_THRESHOLD = 0.7  # a primary source is more relevant than this ...
PRIMARY_COUNT = 3  # ... and among the top three
RANK_STEP, RANK_FLOOR = 0.1, 0.3  # the heuristic max(0.3, 1 - 0.1 i) without a score
PREVIEW_CONTEXTS = 5  # context_used keeps this many, as the document's pipeline does
_ID_PREFIX = re.compile(r"^\s*id:(\S+)\s*")


@dataclass
class SourceAttribution:
    """Attribution for a single source document used in reasoning."""

    document_id: str
    relevance_score: float
    document_title: str | None = None
    excerpt: str | None = None
    chunk_index: int | None = None
    retrieval_rank: int | None = None


@dataclass
class SourceSummary:
    """All sources used across the reasoning chain, the primary ones, and who used what."""

    all_sources: list[SourceAttribution] = field(default_factory=list)
    primary_sources: list[SourceAttribution] = field(default_factory=list)
    source_usage_by_step: dict[int, list[str]] = field(default_factory=dict)


@dataclass
class ReasoningStep:
    """One reasoning step with its structured source attributions (``context_used``
    is the document's legacy list of context documents)."""

    step_number: int
    question: str
    intermediate_answer: str
    confidence_score: float
    reasoning_trace: str = ""
    execution_time: float = 0.0
    source_attributions: list[SourceAttribution] = field(default_factory=list)
    context_used: list[str] = field(default_factory=list)


def _relevance(value: object) -> float:
    """A relevance in 0..1; anything else is refused rather than silently clamped."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"relevance_score must be a number in 0..1, not {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"relevance_score must be in 0..1, not {value!r}")
    return float(value)


def _excerpt(text: object) -> str | None:
    return None if text is None else str(text)[:EXCERPT_CHARS]


def rank_relevance(index: int) -> float:
    """The document's heuristic for a source without a score: by retrieval rank."""
    return max(RANK_FLOOR, 1.0 - index * RANK_STEP)


class SourceAttributionService:
    """Creates, extracts, aggregates and formats source attributions (the document's
    ``SourceAttributionService``); ``_source_cache`` keeps the latest attribution
    made for each document id."""

    def __init__(self) -> None:
        self._source_cache: dict[str, SourceAttribution] = {}

    def create_source_attribution(
        self,
        document_id: str,
        relevance_score: float,
        *,
        document_title: str | None = None,
        excerpt: str | None = None,
        chunk_index: int | None = None,
        retrieval_rank: int | None = None,
    ) -> SourceAttribution:
        if not str(document_id or "").strip():
            raise ValueError("document_id must not be empty")
        if retrieval_rank is not None and retrieval_rank < 1:
            raise ValueError("retrieval_rank is 1-based")
        attribution = SourceAttribution(
            document_id=str(document_id),
            relevance_score=_relevance(relevance_score),
            document_title=document_title,
            excerpt=_excerpt(excerpt),
            chunk_index=chunk_index,
            retrieval_rank=retrieval_rank,
        )
        self._source_cache[attribution.document_id] = attribution
        return attribution

    def extract_sources_from_context(
        self,
        context_documents: list[str],
        search_results: list[dict[str, Any]] | None = None,
    ) -> list[SourceAttribution]:
        """From structured search results when given (preferred), else from raw
        context strings (an ``id:doc_123`` prefix names the document)."""
        if search_results:
            return [self._from_result(i, r) for i, r in enumerate(search_results)]
        return [self._from_text(i, text) for i, text in enumerate(context_documents)]

    def _from_result(self, index: int, result: Mapping[str, Any]) -> SourceAttribution:
        score = result.get("score")
        return self.create_source_attribution(
            document_id=str(result.get("document_id") or result.get("id") or ""),
            relevance_score=rank_relevance(index) if score is None else score,
            document_title=result.get("title") or result.get("document_title"),
            excerpt=result.get("content") or result.get("excerpt"),
            chunk_index=result.get("chunk_index"),
            retrieval_rank=result.get("retrieval_rank") or index + 1,
        )

    def _from_text(self, index: int, text: str) -> SourceAttribution:
        prefix = _ID_PREFIX.match(text)
        if prefix:
            document_id, content = prefix.group(1), text[prefix.end() :]
        else:  # no id given: name it by its content, so the same text dedups
            document_id = f"context_{hashlib.sha256(text.encode()).hexdigest()[:12]}"
            content = text
        return self.create_source_attribution(
            document_id=document_id,
            relevance_score=rank_relevance(index),
            excerpt=content.strip(),
            retrieval_rank=index + 1,
        )

    def aggregate_sources_across_steps(
        self, reasoning_steps: Sequence[ReasoningStep]
    ) -> SourceSummary:
        """Dedup by ``document_id`` keeping the highest relevance (the first seen on a
        tie), sort by relevance (stable), primary = the top 3 above 0.7, else the top 3."""
        best: dict[str, SourceAttribution] = {}
        usage: dict[int, list[str]] = {}
        for step in reasoning_steps:
            used = usage.setdefault(step.step_number, [])
            for source in step.source_attributions:
                if source.document_id not in used:
                    used.append(source.document_id)
                kept = best.get(source.document_id)
                if kept is None or source.relevance_score > kept.relevance_score:
                    best[source.document_id] = source
        ranked = sorted(best.values(), key=lambda s: -s.relevance_score)
        strong = [s for s in ranked if s.relevance_score > PRIMARY_THRESHOLD]
        primary = (strong or ranked)[:PRIMARY_COUNT]
        return SourceSummary(
            all_sources=ranked, primary_sources=primary, source_usage_by_step=usage
        )

    def enhance_reasoning_step_with_sources(
        self,
        step: ReasoningStep,
        retrieved_documents: list[dict[str, Any]] | None = None,
    ) -> ReasoningStep:
        """The step with attributions from ``retrieved_documents`` (or, without them,
        its ``context_used``), each relevance scaled by the step's confidence."""
        found = self.extract_sources_from_context(step.context_used, retrieved_documents)
        confidence = _relevance(step.confidence_score)
        adjusted = [
            replace(s, relevance_score=round(s.relevance_score * confidence, 6)) for s in found
        ]
        return replace(step, source_attributions=adjusted)

    def format_sources_for_display(
        self, source_summary: SourceSummary, include_excerpts: bool = True
    ) -> dict[str, Any]:
        """Format sources for user-friendly display."""
        return {
            "total_sources": len(source_summary.all_sources),
            "primary_sources": [
                {
                    "document_id": source.document_id,
                    "title": source.document_title or source.document_id,
                    "relevance": round(source.relevance_score, 2),
                    "excerpt": source.excerpt if include_excerpts else None,
                }
                for source in source_summary.primary_sources
            ],
            "step_breakdown": {
                f"step_{step_num}": {
                    "step_number": step_num,
                    "sources_used": len(doc_ids),
                    "document_ids": doc_ids,
                }
                for step_num, doc_ids in source_summary.source_usage_by_step.items()
            },
        }
