"""Turning claims into an answer with ``[n]`` markers.

Markers are numbered 1..N in order of first use, so the answer's markers
are exactly the ``quoted_as`` values of its quoted sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citations.generators import Claim

NOT_FOUND = "I could not find an answer to this question in the documents."


@dataclass(frozen=True)
class ComposedClaim:
    claim: Claim
    quoted_as: str
    reply_start: int
    reply_end: int


@dataclass(frozen=True)
class Composition:
    answer: str
    claims: list[ComposedClaim]
    quoted: dict[int, str]  # passage index -> quoted_as


def compose(claims: Sequence[Claim]) -> Composition:
    """``sentence [n] sentence [m] …``; an empty claim list gives the not-found answer."""
    if not claims:
        return Composition(answer=NOT_FOUND, claims=[], quoted={})
    quoted: dict[int, str] = {}
    parts: list[str] = []
    composed: list[ComposedClaim] = []
    cursor = 0
    for claim in claims:
        number = quoted.setdefault(claim.passage, str(len(quoted) + 1))
        if parts:
            parts.append(" ")
            cursor += 1
        composed.append(ComposedClaim(claim, number, cursor, cursor + len(claim.reply)))
        marker = f" [{number}]"
        parts.append(claim.reply + marker)
        cursor += len(claim.reply) + len(marker)
    return Composition(answer="".join(parts), claims=composed, quoted=quoted)
