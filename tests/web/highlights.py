"""Independent checks of a highlight: which words of the original PDF page lie
inside highlight boxes given in percent of the page image (as drawn)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pymupdf

PctBox = tuple[float, float, float, float]  # left, top, width, height in % of the page


def words_under(pdf: Path, page_number: int, boxes: Iterable[PctBox]) -> set[str]:
    """Words whose centre falls inside any box, read from the displayed page."""
    with pymupdf.open(pdf) as document:
        page = document[page_number - 1]
        width, height = page.rect.width, page.rect.height
        regions = [
            pymupdf.Rect(
                left * width / 100,
                top * height / 100,
                (left + w) * width / 100,
                (top + h) * height / 100,
            )
            for left, top, w, h in boxes
        ]
        found = set()
        for x0, y0, x1, y1, word, *_ in page.get_text("words"):
            centre = pymupdf.Rect(x0, y0, x1, y1) * page.rotation_matrix
            point = pymupdf.Point((centre.x0 + centre.x1) / 2, (centre.y0 + centre.y1) / 2)
            if any(region.contains(point) for region in regions):
                found.add(word)
        return found


def words_of(text: str) -> set[str]:
    return {w for w in re.split(r"\s+", text) if w}
