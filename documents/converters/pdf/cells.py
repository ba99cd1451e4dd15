"""The text of table cells, read from the page's words by each cell's box.

A clipped ``get_text`` per cell would parse the whole page again for every
cell; the page's word list, read once for all its tables, gives each cell's
words instead. A cell whose text the word list cannot give as a clip would (a
word across its border, as when neighbouring cells' text touches;
right-to-left text; unmapped glyphs) is still clipped.
"""

from __future__ import annotations

import re
from operator import attrgetter

import pymupdf

from documents.converters._mdbuild import table_cell
from documents.converters.pdf.extract import TEXT_FLAGS, Superscript, without_controls
from documents.converters.pdf.geometry import Box
from documents.converters.pdf.thresholds import (
    CELL_BORDER_PT,
    MIN_WORD_WIDTH_PT,
    RAISED_TOLERANCE_PT,
)
from documents.converters.pdf.words import PageWordIndex, Word

# MuPDF's word list cuts words where right-to-left and left-to-right text meet and
# at U+FFFD; a cell holding such text is read from its own clipped text page
_CUT_BY_WORD_LIST = re.compile("[\u0590-\u0900\ufb1d-\ufefc\ufffd]")


class CellWords(PageWordIndex):
    """The page's words, read once for all its tables, superscripts marked."""

    def __init__(self, page: pymupdf.Page, superscripts: list[Superscript]) -> None:
        super().__init__(page)
        if superscripts:
            self.words = [_raised_marked(word, superscripts) for word in self.words]

    def inside(self, box: Box | None) -> str:
        """The text of the cell ``box``, whitespace-normalised."""
        if not box:
            return ""
        band = self.band(box.y0, box.y1)
        cell = [w for w in band if box.x0 <= w.centre_x <= box.x1]
        if any(
            w.crosses(box.x0, CELL_BORDER_PT) or w.crosses(box.x1, CELL_BORDER_PT) for w in band
        ) or any(_CUT_BY_WORD_LIST.search(w.text) for w in cell):
            assert self.page is not None  # made from a page
            text = self.page.get_text("text", clip=box.as_tuple(), flags=TEXT_FLAGS)
        else:
            text = " ".join(w.text for w in sorted(cell, key=attrgetter("order")))
        return table_cell(without_controls(text))


def _raised_marked(word: Word, superscripts: list[Superscript]) -> Word:
    """A word of the word list holding a superscript of the page, marked as the
    page's lines mark it (``superscript_marked``): the word list runs a footnote
    mark into the number before it ("273.879.7501") or an exponent into its unit
    ("(km2)"). Where the raised text occurs more than once in the word, the
    occurrence nearest its place on the page is the one."""
    text = word.text
    for box, raised in superscripts:
        if not _within(box, word):
            continue
        found = [i for i in range(len(text)) if text.startswith(raised, i)]
        if not found:
            continue
        width = max(word.right - word.left, MIN_WORD_WIDTH_PT)
        estimate = (box.x0 - word.left) / width * len(text)
        at = min(found, key=lambda i: abs(i - estimate))
        return word._replace(text=f"{text[:at]}^{raised}^{text[at + len(raised) :]}")
    return word


def _within(box: Box, word: Word) -> bool:
    """The superscript's ``box`` lies across the word's width and meets its height."""
    return not (
        box.x0 < word.left - RAISED_TOLERANCE_PT
        or box.x1 > word.right + RAISED_TOLERANCE_PT
        or box.y1 < word.top
        or box.y0 > word.bottom
    )
