"""A PDF page's words, read once and looked up by the box their centre lies in.

Both the converter (the text of each table cell) and the source viewer (the
words of a highlighted line) ask the same question many times per page; one
``get_text('words')`` sorted by the height of the word centres answers each in
a bisect instead of a pass over the page.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import NamedTuple

import pymupdf

from documents.converters.pdf.extract import TEXT_FLAGS


class Word(NamedTuple):
    """A word of the page and its box, keyed by the height of its centre."""

    centre_y: float
    centre_x: float
    order: int  # MuPDF's reading order on the page
    text: str
    left: float
    right: float
    top: float
    bottom: float

    def crosses(self, x: float, tolerance: float) -> bool:
        """The word has text on both sides of ``x``, past ``tolerance``."""
        return self.left < x - tolerance and self.right > x + tolerance


class PageWordIndex:
    """The words of one page (read with the converter's flags), by centre height."""

    def __init__(self, page: pymupdf.Page | None, words: Sequence[Sequence] | None = None) -> None:
        self.page = page
        if words is None:
            assert page is not None, "the words of a page need the page, or its words"
            words = page.get_text("words", flags=TEXT_FLAGS)
        # PyMuPDF's words: (x0, y0, x1, y1, text, block, line, word)
        self.words = sorted(
            Word((w[1] + w[3]) / 2, (w[0] + w[2]) / 2, order, w[4], w[0], w[2], w[1], w[3])
            for order, w in enumerate(words)
        )
        self.heights = [w.centre_y for w in self.words]

    def band(self, top: float, bottom: float) -> list[Word]:
        """Words whose centre lies between the two heights."""
        return self.words[bisect_left(self.heights, top) : bisect_right(self.heights, bottom)]

    def within(self, box: Sequence[float]) -> list[Word]:
        """Words whose centre lies inside ``box`` (x0, y0, x1, y1)."""
        x0, y0, x1, y1 = box
        return [w for w in self.band(y0, y1) if x0 <= w.centre_x <= x1]
