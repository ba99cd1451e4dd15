"""Highlight boxes narrowed from whole PDF lines to the words of a character range.

The converter stores one box per PDF line (or table cell) with the Markdown
characters it produced. A chunk or quoted sentence that starts or ends inside
a line would light up the whole line; here such a line is narrowed to the
boxes of the words that carry the range's characters, read from the page with
``get_text('words')``. The line's Markdown words and the page's words are
matched in order (escapes, emphasis marks and case ignored); when a word of
the range finds no partner on the page (ligatures, joined hyphenation), the
whole line is kept: a box never leaves out cited text. Lines with right-to-left
script are kept whole as well: the page lists their words left to right, the
Markdown in reading order, and a repeated word could pair with the wrong copy.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from difflib import SequenceMatcher

import pymupdf

from documents.converters._pdf_layout import TEXT_FLAGS

Range = tuple[int, int]
Span = Sequence  # [char_start, char_end, page, x0, y0, x1, y1] as SourceBoxes stores it

_WORD = re.compile(r"\S+")
_NOT_WORD_CHARS = re.compile(r"[\W_]+")


def _right_to_left(text: str) -> bool:
    return any(unicodedata.bidirectional(ch) in {"R", "AL"} for ch in text)


def _key(word: str) -> str:
    """What two spellings of one word share: letters and digits, case folded."""
    return _NOT_WORD_CHARS.sub("", word).casefold() or word


def _rounded(box: Sequence[float]) -> list[float]:
    return [round(float(v), 2) for v in box]


class PageWords:
    """The words of one PDF page, read once, matched line by line."""

    def __init__(self, page: pymupdf.Page) -> None:
        self.words = page.get_text("words", flags=TEXT_FLAGS)  # as the converter read it

    def in_line(self, box: Sequence[float]) -> list[tuple[float, float, float, float, str]]:
        """Words whose centre lies inside ``box``, left to right."""
        x0, y0, x1, y1 = box
        inside = [
            (w[0], w[1], w[2], w[3], w[4])
            for w in self.words
            if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1
        ]
        return sorted(inside, key=lambda w: w[0])

    def narrowed(self, span: Span, text: str, ranges: Sequence[Range]) -> list[list[float]]:
        """Boxes on this line for the parts of ``ranges`` it carries.

        ``text`` is the Markdown the span produced (``markdown[start:end]``).
        """
        start, end, _page, *box = span
        wanted = [(max(a, start), min(b, end)) for a, b in ranges if a < end and b > start]
        if not wanted:
            return []
        if all(a <= start and b >= end for a, b in wanted) or _right_to_left(text):
            return [_rounded(box)]
        mine = [(m.start() + start, m.end() + start, m.group()) for m in _WORD.finditer(text)]
        theirs = self.in_line(box)
        partner: dict[int, int] = {}
        matcher = SequenceMatcher(
            a=[_key(w[2]) for w in mine], b=[_key(w[4]) for w in theirs], autojunk=False
        )
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                partner[block.a + k] = block.b + k
        boxes: list[list[float]] = []
        for a, b in wanted:
            covered = [i for i, (ws, we, _) in enumerate(mine) if ws < b and we > a]
            if not covered:
                continue
            if any(i not in partner for i in covered):
                return [_rounded(box)]  # cannot place every word: keep the whole line
            found = [theirs[partner[i]] for i in covered]
            narrowed = [
                min(w[0] for w in found),
                box[1],
                max(w[2] for w in found),
                box[3],
            ]
            boxes.append(_rounded(narrowed))
        return boxes
