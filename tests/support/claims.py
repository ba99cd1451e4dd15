"""Where an answer's claim sits: the page of its quoted sentence, as the pages say it."""

from __future__ import annotations

from citations.models import ClaimCitation
from citations.places import places_of


def claim_page(claim: ClaimCitation) -> int | None:
    """The page of ``claim``'s quoted sentence, from its chunk's locations."""
    source = claim.quoted_source
    places = places_of(
        chunk_text=source.chunk_text,
        chunk_start=source.chunk.char_start,
        locations=list(source.chunk.locations.all()),
        claims=[(claim.source_start, claim.source_end)],
    )
    return places[0].page if places else None
