"""Turning claims into an answer with ``[n]`` markers.

Markers are numbered 1..N in order of first use, so the answer's markers
are exactly the ``quoted_as`` values of its quoted sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citations.generators import Claim
from citations.markers import quoted_text_neutralise

NOT_FOUND = "I could not find an answer to this question in the documents."


@dataclass(frozen=True)
class ComposedClaim:
    """A claim as it stands in the answer: ``reply`` is the claim's text with any
    marker or markup it quotes neutralised, at ``answer[reply_start:reply_end]``."""

    claim: Claim
    quoted_as: str
    reply_start: int
    reply_end: int
    reply: str


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
        reply = quoted_text_neutralise(claim.reply)
        composed.append(ComposedClaim(claim, number, cursor, cursor + len(reply), reply))
        marker = f" [{number}]"
        parts.append(reply + marker)
        cursor += len(reply) + len(marker)
    return Composition(answer="".join(parts), claims=composed, quoted=quoted)


NO_SUPPORTED_CLAIM = (
    "The model's answer could not be verified against the documents: none of its "
    "sentences is supported by a passage retrieved for this question."
)


def compose_sentences(claims: Sequence[Claim], *, empty: str = NOT_FOUND) -> Composition:
    """A model-written answer: each sentence once, followed by the markers of the
    passages that support it (``sentence [1] [2]``); claims of one sentence share its
    reply span. Markers are numbered in order of first use, as :func:`compose` does."""
    if not claims:
        return Composition(answer=empty, claims=[], quoted={})
    quoted: dict[int, str] = {}
    parts: list[str] = []
    composed: list[ComposedClaim] = []
    cursor, span, current = 0, (0, 0), object()
    for claim in claims:
        number = quoted.setdefault(claim.passage, str(len(quoted) + 1))
        if claim.sentence is None or claim.sentence != current:
            if parts:
                parts.append(" ")
                cursor += 1
            reply = quoted_text_neutralise(claim.reply)
            span, current = (cursor, cursor + len(reply)), claim.sentence
            parts.append(reply)
            cursor += len(reply)
        composed.append(ComposedClaim(claim, number, span[0], span[1], reply))
        marker = f" [{number}]"
        parts.append(marker)
        cursor += len(marker)
    return Composition(answer="".join(parts), claims=composed, quoted=quoted)
