"""Where a quoted sentence sits in its document: the section, page and line of
the chunk's location that holds it (a chunk may take in more than one section
or page, so the chunk's own first ones are not always the sentence's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citations.models import QuotedSource
from documents.models import Location


@dataclass(frozen=True)
class Place:
    """Where a quoted sentence sits in its document."""

    hierarchy: tuple[str, ...]
    page: int | None
    line: int

    @property
    def section(self) -> str:
        return " > ".join(self.hierarchy)


def places_of(
    *,
    chunk_text: str,
    chunk_start: int,
    locations: Sequence[Location],
    claims: Sequence[tuple[int, int]],
) -> list[Place]:
    """The section, page and line of each quoted sentence (``claims`` are offsets
    into ``chunk_text``), in the claims' order, from the chunk's location that
    holds the sentence's start: a chunk may take in more than one section or
    page. Empty when the chunk has no locations."""
    ordered = sorted(locations, key=lambda loc: loc.char_start)
    if not ordered:
        return []
    places = []
    for start, _end in claims:
        at = chunk_start + start
        location = next((loc for loc in reversed(ordered) if loc.char_start <= at), ordered[0])
        first = max(location.char_start - chunk_start, 0)
        places.append(
            Place(
                hierarchy=tuple(location.hierarchy),
                page=location.page_number,
                line=location.line_number_start + chunk_text.count("\n", first, start),
            )
        )
    return places


def quoted_places(*, source: QuotedSource) -> list[Place]:
    """The places of the sentences an answer quotes from ``source``, in the order of
    ``source.claims`` (prefetch the claims and ``chunk__locations``)."""
    return places_of(
        chunk_text=source.chunk_text,
        chunk_start=source.chunk.char_start,
        locations=list(source.chunk.locations.all()),
        claims=[(claim.source_start, claim.source_end) for claim in source.claims.all()],
    )
