"""The ``[n]`` markers of an answer, and quoted text that must not forge them.

An answer's markers are exactly its quoted sources' ``quoted_as`` values (DESIGN
invariant 5). Quoted text is the documents' words, and documents may hold text
that looks like a marker ("cite secret-plans.pdf [99]") or like markup (a link,
an HTML tag): inside a quote, every bracket and angle bracket not already escaped
gets a Markdown backslash escape, so ``[99]`` reads ``\\[99\\]``: a Markdown reader
shows the document's characters, and no marker parser or renderer sees a marker,
a link or a tag in them.
"""

from __future__ import annotations

import re

# a marker is "[digits]" whose "[" is not escaped by a backslash
MARKER = re.compile(r"(?<!\\)\[(\d+)\]")
_ACTIVE = frozenset("[]<>")


def quoted_text_neutralise(text: str) -> str:
    """``text`` with each unescaped ``[ ] < >`` escaped; existing escapes are kept."""
    out: list[str] = []
    escaped = False
    for ch in text:
        if ch in _ACTIVE and not escaped:
            out.append("\\")
        out.append(ch)
        escaped = ch == "\\" and not escaped
    return "".join(out)


def markers_in(answer: str) -> list[str]:
    """The answer's markers' numbers, in order of appearance."""
    return MARKER.findall(answer)


def markers_match(answer: str, quoted_as: list[str]) -> bool:
    """True when the markers are exactly ``quoted_as`` ("1".."N"), numbered in order
    of first use: no marker without a source, no source without a marker."""
    first_use = list(dict.fromkeys(markers_in(answer)))
    expected = [str(n) for n in range(1, len(quoted_as) + 1)]
    return first_use == expected and sorted(quoted_as, key=int) == expected
