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

from documents.converters._pdf_layout import TEXT_FLAGS


class Word(NamedTuple):
    centre_y: float
    centre_x: float
    order: int  # MuPDF's reading order on the page
    text: str
    left: float
    right: float
    top: float
    bottom: float

    def crosses(self, x: float, tolerance: float) -> bool:
        return self.left < x - tolerance and self.right > x + tolerance


class PageWordIndex:
    """The words of one page (read with the converter's flags), by centre height."""

    def __init__(self, page: pymupdf.Page | None, words: Sequence[Sequence] | None = None) -> None:
        self.page = page
        raw = page.get_text("words", flags=TEXT_FLAGS) if words is None else words
        self.words = sorted(
            Word((w[1] + w[3]) / 2, (w[0] + w[2]) / 2, order, w[4], w[0], w[2], w[1], w[3])
            for order, w in enumerate(raw)
        )
        self.heights = [w.centre_y for w in self.words]

    def band(self, top: float, bottom: float) -> list[Word]:
        """Words whose centre lies between the two heights."""
        return self.words[bisect_left(self.heights, top) : bisect_right(self.heights, bottom)]

    def within(self, box: Sequence[float]) -> list[Word]:
        """Words whose centre lies inside ``box`` (x0, y0, x1, y1)."""
        x0, y0, x1, y1 = box
        return [w for w in self.band(y0, y1) if x0 <= w.centre_x <= x1]
