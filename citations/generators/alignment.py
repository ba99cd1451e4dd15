"""A model's quote aligned to the exact span of its chunk it stands for.

Models copy quotes imperfectly: typographic quotes and dashes for straight ones,
another case, an ellipsis for the words between two exact pieces, a letter dropped.
The quote is looked for in steps, each weaker than the last, and whatever step
finds it, what is stored and shown is the chunk's own span (``text[start:end]``),
never the model's wording:

1. ``exact``: verbatim, whitespace runs matching any whitespace run;
2. ``normalised``: case, typographic quotes, dashes and spaces folded;
3. ``ellipsis``: pieces joined by "..." or "…", each found in order;
4. ``near``: within a bounded edit distance (recorded on the claim), for quotes long
   enough that a few wrong letters cannot make them say something else.

A quote that no step finds is not in the chunk, and is never numbered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

# characters a model writes for the document's (or the other way round)
_FOLDED = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2033": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u00ad": "",
}
_ELLIPSIS = re.compile(r"\s*(?:\.\s*\.\s*\.|\u2026)\s*")
# what a model wraps a quote in, or ends it with where the chunk has none
_EDGES = " \t\r\n\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb"
# a near match needs this many characters of quote (a short quote with a wrong letter
# could be another word: "thirty"/"thirsty"), and at most one edit per this many
NEAR_MIN_CHARS = 24
NEAR_CHARS_PER_EDIT = 16
NEAR_MAX_EDITS = 10
# longer quotes are not searched approximately: the search grows with quote × chunk
NEAR_MAX_CHARS = 600


@dataclass(frozen=True)
class Alignment:
    """Where a quote stands in its chunk, how it was found, and how far it was."""

    start: int
    end: int
    how: str
    distance: int = 0


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` with case, quotes, dashes and whitespace folded, and for each folded
    character the index of the original character it came from."""
    out: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        if char.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                where.append(index)
            continue
        folded = _FOLDED.get(char, char)
        if not folded:
            continue
        lowered = folded.lower()
        out.append(lowered if len(lowered) == 1 else folded)
        where.append(index)
    return "".join(out), where


def exact_span(
    text: str, quote: str, within: tuple[int, int] | None = None
) -> tuple[int, int] | None:
    """Where ``quote`` stands verbatim in ``text``, whitespace runs matching any
    whitespace run; inside ``within`` first when given."""
    words = quote.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words))
    if within is not None:
        found = pattern.search(text, within[0], within[1])
        if found:
            return found.span()
    found = pattern.search(text)
    return found.span() if found else None


def _back(where: list[int], start: int, end: int) -> tuple[int, int]:
    """A folded span as the original text's span."""
    return where[start], where[end - 1] + 1


def _pieces(folded_text: str, pieces: list[str]) -> tuple[int, int] | None:
    """The span from the first piece to the last, each found after the one before."""
    cursor, first = 0, None
    for piece in pieces:
        found = folded_text.find(piece, cursor)
        if found < 0:
            return None
        first = found if first is None else first
        cursor = found + len(piece)
    return (first, cursor) if first is not None else None


def _near(folded_text: str, folded_quote: str) -> tuple[int, int, int] | None:
    if not NEAR_MIN_CHARS <= len(folded_quote) <= NEAR_MAX_CHARS:
        return None
    edits = min(NEAR_MAX_EDITS, len(folded_quote) // NEAR_CHARS_PER_EDIT)
    pattern = f"(?:{regex.escape(folded_quote)}){{e<={edits}}}"
    found = regex.search(pattern, folded_text, flags=regex.BESTMATCH)
    if found is None:
        return None
    start, end = found.span()
    while start < end and folded_text[start] == " ":
        start += 1
    while end > start and folded_text[end - 1] == " ":
        end -= 1
    return (start, end, sum(found.fuzzy_counts)) if end > start else None


def quote_align(text: str, quote: str, within: tuple[int, int] | None = None) -> Alignment | None:
    """Where ``quote`` stands in ``text`` (inside ``within`` first, for the exact step),
    or None when it is not there."""
    exact = exact_span(text, quote, within)
    if exact is not None:
        return Alignment(*exact, how="exact")
    trimmed = quote.strip(_EDGES)
    folded_text, where = _folded(text)
    folded_quote = _folded(trimmed)[0].strip()
    if not folded_quote or not folded_text:
        return None
    found = folded_text.find(folded_quote)
    if found < 0 and folded_quote.endswith("."):  # the model ended a fragment with a stop
        folded_quote = folded_quote.rstrip(".").rstrip()
        found = folded_text.find(folded_quote) if folded_quote else -1
    if found >= 0:
        return Alignment(*_back(where, found, found + len(folded_quote)), how="normalised")
    pieces = [p.strip() for p in _ELLIPSIS.split(folded_quote) if p.strip()]
    if len(pieces) > 1:
        span = _pieces(folded_text, pieces)
        if span is not None:
            return Alignment(*_back(where, *span), how="ellipsis")
        return None  # an ellipsis quote is pieces, each exact, or nothing
    near = _near(folded_text, folded_quote)
    if near is not None:
        return Alignment(*_back(where, near[0], near[1]), how="near", distance=near[2])
    return None
