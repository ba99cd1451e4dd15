"""The evidence an assistant message carries, derived once from its query execution:
``file_citation`` annotations for the answer's ``[n]`` markers, and the
source-tracing fields (chunk_id, page, lines, section, database_id) of every
retrieved chunk."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from citations.models import ClaimCitation, QueryExecution, QuotedSource

_MARKER_RUN = re.compile(r" (\[\d+\])")


@dataclass(frozen=True)
class CitedMarker:
    """One ``[n]`` marker of an answer where it stands in the text, with the claim
    it closes and the quoted source it names."""

    claim: ClaimCitation
    source: QuotedSource
    marker: str
    start: int


def cited_markers(*, execution: QueryExecution) -> list[CitedMarker]:
    """The answer's markers in the order of its claims; a claim whose marker is not
    where it should stand is left out: never annotate text that is not the marker."""
    claims = execution.claim_citations.select_related("quoted_source").order_by("segment", "id")
    found = []
    for claim in claims:
        marker = f"[{claim.quoted_source.quoted_as}]"
        start = marker_start(execution.answer, claim.reply_end, marker)
        if start is not None:
            found.append(CitedMarker(claim, claim.quoted_source, marker, start))
    return found


def annotations_of(*, execution: QueryExecution) -> list[dict[str, Any]]:
    """One annotation per ``[n]`` marker; the marker follows its claim after one space."""
    return [
        {
            "type": "file_citation",
            "text": cited.marker,
            "start_index": cited.start,
            "end_index": cited.start + len(cited.marker),
            "file_citation": {
                "file_id": str(cited.source.file_id),
                "chunk_id": str(cited.source.chunk_id),
                "quote": cited.claim.source_sentence,
            },
        }
        for cited in cited_markers(execution=execution)
    ]


def marker_start(answer: str, reply_end: int, marker: str) -> int | None:
    """Where ``marker`` stands in the run of markers after a claim (a model's sentence
    citing several sources is followed by several: ``sentence [1] [2]``)."""
    for found in _MARKER_RUN.finditer(answer, reply_end):
        if found.start() != reply_end:
            return None
        if found.group(1) == marker:
            return found.start(1)
        reply_end = found.end()
    return None


def sources_of(*, execution: QueryExecution) -> list[dict[str, Any]]:
    """Every retrieved chunk in rank order, with the number it is cited as, if any."""
    quoted = {s.hit_id: s.quoted_as for s in execution.quoted_sources.all()}
    hits = (
        execution.hits.select_related("chunk")
        .defer("chunk__embedding", "chunk__chunk_text")
        .order_by("k_pos")
    )
    return [
        {
            "chunk_id": str(hit.chunk_id),
            "database_id": str(hit.chunk.vector_database_id),
            "file_id": str(hit.file_id),
            "file_revision": hit.file_revision,
            "page": hit.chunk.page_start,
            "page_end": hit.chunk.page_end,
            "lines": {"start": hit.chunk.line_number_start, "end": hit.chunk.line_number_end},
            "section": hit.section,
            "hierarchy": list(hit.chunk.hierarchy),
            "quoted_as": quoted.get(hit.pk),
            "score": hit.score_norm,
            "chunk_url": reverse("chunk-detail", args=[hit.chunk.vector_database_id, hit.chunk_id]),
            "file_url": reverse("file-content", args=[hit.file_id]),
        }
        for hit in hits
    ]
