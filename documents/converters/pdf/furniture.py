"""Page furniture: running headers and footers and page numbers, left out.

A header or footer is text repeated (digits aside) at the same height on many
pages, in a block lying wholly in the page's top or bottom band; a page number
is a lone number that is the first or last thing on its page or reaches into a
margin, "Page 2 of 8" near the top or foot, or facing pages' numbers in a footer.
"""

from __future__ import annotations

import re
from collections import Counter

from documents.converters.pdf.geometry import Box, union
from documents.converters.pdf.lines import Block, Line
from documents.converters.pdf.thresholds import (
    FURNITURE_BAND,
    FURNITURE_MIN_PAGES,
    FURNITURE_ROW_PT,
    NAMED_PAGE_NUMBER_BAND,
    PAGE_MARGIN,
    PAGE_NUMBER_DIGITS,
    SLACK_PT,
    SPREAD_WIDTH_EM,
)

FurnitureKey = tuple[str, int]  # (text with digits as "#", height step)

PAGE_NUMBER = re.compile(r"^\W*(page\s*)?(\d{1,4}|[ivxlcdm]{1,6})(\s*(of|/)\s*\d{1,4})?\W*$", re.I)
MARGIN_NUMBER = re.compile(r"^\W*(page\s*)?\d{1,4}(\s*(of|/)\s*\d{1,4})?\W*$", re.I)
NAMED_PAGE_NUMBER = re.compile(r"^\W*page\s*\d{1,4}\s*(of|/)\s*\d{1,4}\W*$", re.I)


def _furniture_key(line: Line, block: Block, height: float) -> FurnitureKey | None:
    """Only lines of blocks lying wholly in the top or bottom band can be page furniture."""
    box = block.box
    if FURNITURE_BAND.top(height) < box.y1 and box.y0 < FURNITURE_BAND.bottom(height):
        return None
    return re.sub(r"\d+", "#", line.text.lower()), round(line.box.y0 / FURNITURE_ROW_PT)


def furniture_keys(pages: list[list[Block]], heights: list[float]) -> set[FurnitureKey]:
    """Header/footer lines: same text (digits ignored) at the same height on many pages."""
    if len(pages) < FURNITURE_MIN_PAGES:
        return set()
    seen: Counter[FurnitureKey] = Counter()
    for blocks, height in zip(pages, heights, strict=True):
        keys = {_furniture_key(ln, b, height) for b in blocks for ln in b.lines}
        seen.update(k for k in keys if k)
    need = max(FURNITURE_MIN_PAGES, (len(pages) + 1) // 2)
    return {k for k, n in seen.items() if n >= need}


def _is_page_number(block: Block, blocks: list[Block], height: float) -> bool:
    """A lone number that is the first or last thing on the page, or sits in the
    margin; "Page 2 of 8" anywhere in the page's top or bottom band for it."""
    if len(block.lines) != 1 or not PAGE_NUMBER.match(block.lines[0].text):
        return False
    if _in_margin(block.box, height):
        return True
    if NAMED_PAGE_NUMBER.match(block.lines[0].text) and (
        block.box.y1 < NAMED_PAGE_NUMBER_BAND.top(height)
        or block.box.y0 > NAMED_PAGE_NUMBER_BAND.bottom(height)
    ):
        return True
    others = [b for b in blocks if b is not block and b.lines]
    return bool(others) and (
        block.box.y0 >= max(b.box.y1 for b in others) - SLACK_PT
        or block.box.y1 <= min(b.box.y0 for b in others) + SLACK_PT
    )


def _in_margin(box: Box, height: float, *, wholly: bool = False) -> bool:
    """``box`` reaches into (or, ``wholly``, lies inside) the top or bottom margin."""
    top, bottom = PAGE_MARGIN.top(height), PAGE_MARGIN.bottom(height)
    if wholly:
        return box.y1 <= top or box.y0 >= bottom
    return box.y0 < top or box.y1 > bottom


def _margin_number(line: Line, block: Block, height: float) -> bool:
    """A page number sharing a block that lies wholly in the top or bottom margin
    with a footer's text: digits ("12", "Page 3 of 8"), or two facing pages'
    numbers set far apart ("208" and "209" at a spread's two outer corners)."""
    if not _in_margin(block.box, height, wholly=True):
        return False
    if MARGIN_NUMBER.match(line.text):
        return True
    numbers = [line.text[start:end].strip() for start, end, _box in line.parts]
    numbers = [n for n in numbers if n]
    return (
        len(numbers) == 2
        and all(n.isdigit() and len(n) <= PAGE_NUMBER_DIGITS for n in numbers)
        and int(numbers[1]) == int(numbers[0]) + 1
        and line.box.width > SPREAD_WIDTH_EM * line.size  # the corners of a spread
    )


def drop_furniture(blocks: list[Block], height: float, keys: set[FurnitureKey]) -> int:
    """Remove running headers/footers and page numbers in place; return how many lines."""
    before = [list(b.lines) for b in blocks]
    numbers = [b for b in blocks if _is_page_number(b, blocks, height)]
    dropped = 0
    for block in blocks:
        kept = [] if block in numbers else _content_lines(block, height, keys)
        dropped += len(block.lines) - len(kept)
        block.lines = kept
        if kept:
            block.box = union([ln.box for ln in kept])
    if not any(b.lines for b in blocks):  # a page made only of repeated text is content
        for block, lines in zip(blocks, before, strict=True):
            block.lines = lines
        return 0
    blocks[:] = [b for b in blocks if b.lines or b.table is not None]
    return dropped


def _content_lines(block: Block, height: float, keys: set[FurnitureKey]) -> list[Line]:
    """The block's lines that are neither a running header or footer nor a page number."""
    return [
        ln
        for ln in block.lines
        if _furniture_key(ln, block, height) not in keys and not _margin_number(ln, block, height)
    ]
