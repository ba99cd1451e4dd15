"""Pass 3, blocks: a page's blocks with its tables in place, in reading order.

Ruled and borderless tables take their text out of the blocks it was in and
stand as blocks of their own; a lone list marker joins the text on its row;
prose columns are read one after the other, form-like layouts row by row.
"""

from __future__ import annotations

import pymupdf

from documents.converters.pdf.aligned import aligned_tables
from documents.converters.pdf.forms import form_tables
from documents.converters.pdf.geometry import Box, union
from documents.converters.pdf.lines import MARKER_ONLY, Block, Line, join_row
from documents.converters.pdf.ruled import ruled_tables
from documents.converters.pdf.thresholds import (
    COLUMN_MIN_SHARE,
    GUTTER_CROSSING_SHARE,
    GUTTER_EDGE_SHARE,
    MARKER_REACH_PT,
    MARKER_ROW_LINES,
    MAX_COLUMN_DEPTH,
    MIN_LINE_HEIGHT_PT,
    PROSE_MIN_LINES,
    PROSE_PARAGRAPH_SHARE,
    SLACK_PT,
)


def page_blocks(page: pymupdf.Page, blocks: list[Block], *, readable: bool) -> list[Block]:
    """The page's text ``blocks`` (changed in place) and its tables, in reading order.
    ``readable``: the page's text could be read, so its drawings can be too."""
    tables = _ruled_blocks(page) if readable else []
    if tables:
        _remove_table_text(blocks, tables)
    borderless = [Block([], t.bbox, table=t) for t in aligned_tables(blocks)]
    if borderless:
        _remove_table_text(blocks, borderless)
    # a form's two columns head no table; its rows may share lines with another's
    borderless += [Block([], t.bbox, table=t) for t in form_tables(blocks)]
    tables += borderless
    return reading_order(_attach_markers(blocks) + tables)


def _ruled_blocks(page: pymupdf.Page) -> list[Block]:
    """Ruled tables, found from the page's rules alone (see ``ruled``)."""
    try:
        found = ruled_tables(page)
    except Exception:  # damaged drawing commands: the page is still read as text
        return []
    return [Block([], t.bbox, table=t) for t in found]


def _inside(line: Line, box: Box) -> bool:
    """The line's centre lies in ``box``."""
    cx, cy = line.box.centre_x, line.box.centre_y
    return box.x0 <= cx <= box.x1 and box.y0 <= cy <= box.y1


def _remove_table_text(blocks: list[Block], tables: list[Block]) -> None:
    """Lines inside a table leave their blocks (the table reads them from its cells)."""
    for block in blocks:
        kept = [ln for ln in block.lines if not any(_inside(ln, t.box) for t in tables)]
        if len(kept) < len(block.lines):
            block.lines_before_tables = block.line_count
        block.lines = kept
        if block.lines:
            block.box = union([ln.box for ln in block.lines])
    blocks[:] = [b for b in blocks if b.lines]


def _attach_markers(blocks: list[Block]) -> list[Block]:
    """A lone bullet or '.1' block joins the text block on its baseline to the right."""
    out: list[Block] = []
    consumed: set[int] = set()
    for i, block in enumerate(blocks):
        if i in consumed:
            continue
        if len(block.lines) == 1 and MARKER_ONLY.match(block.lines[0].text):
            marker = block.lines[0]
            j = _marker_text(marker, i, blocks, consumed)
            if j is not None:
                other = blocks[j]
                other.lines[0] = join_row(marker, other.lines[0])
                other.box = union([other.box, marker.box])
                consumed.add(i)
        if i not in consumed:
            out.append(block)
    return out


def _marker_text(marker: Line, i: int, blocks: list[Block], consumed: set[int]) -> int | None:
    """The block whose first line is the text of list ``marker`` (block ``i``):
    on the marker's row, starting a little to its right."""
    for j, other in enumerate(blocks):
        if j == i or j in consumed or other.table is not None:
            continue
        first = other.lines[0]
        same_row = abs(first.box.y0 - marker.box.y0) < MARKER_ROW_LINES * max(
            marker.height, MIN_LINE_HEIGHT_PT
        )
        if same_row and 0 <= first.box.x0 - marker.box.x1 < MARKER_REACH_PT:
            return j
    return None


def _lines(blocks: list[Block]) -> int:
    """Lines the blocks hold; a table's block counts as one."""
    return sum(max(len(b.lines), 1) for b in blocks)


def _is_prose(band: list[Block]) -> bool:
    """Enough lines, mostly in paragraphs: text that may be set in columns (a
    form's one-line cells are read row by row instead)."""
    lines = _lines(band)
    in_paragraphs = sum(len(b.lines) for b in band if len(b.lines) >= 2)
    return lines >= PROSE_MIN_LINES and in_paragraphs >= PROSE_PARAGRAPH_SHARE * lines


def _crosses(block: Block, x: float) -> bool:
    """The block has text on both sides of ``x``."""
    return block.box.x0 < x - SLACK_PT < x + SLACK_PT < block.box.x1


def _gutter(blocks: list[Block]) -> float | None:
    """An x that (almost) no block crosses with text on both sides: a column gap;
    of several, the one fewest lines cross (the leftmost of equals)."""
    left = min(b.box.x0 for b in blocks)
    right = max(b.box.x1 for b in blocks)
    margin = GUTTER_EDGE_SHARE * (right - left)
    total = _lines(blocks)
    best: tuple[int, float] | None = None
    for x in sorted({b.box.x1 + SLACK_PT for b in blocks}):
        if not left + margin <= x <= right - margin:
            continue
        crossing = _gutter_crossing(blocks, x, total)
        if crossing is not None and (best is None or crossing < best[0]):
            best = (crossing, x)
    return None if best is None else best[1]


def _gutter_crossing(blocks: list[Block], x: float, total: int) -> int | None:
    """How many lines cross ``x``, if few do and enough lie on each side of it."""
    crossing = _lines([b for b in blocks if _crosses(b, x)])
    lhs = _lines([b for b in blocks if b.box.x1 <= x])
    rhs = _lines([b for b in blocks if b.box.x0 >= x])
    if crossing <= GUTTER_CROSSING_SHARE * total and min(lhs, rhs) >= COLUMN_MIN_SHARE * total:
        return crossing
    return None


def _rows(band: list[Block]) -> list[Block]:
    """Form-like layouts: read row by row, left to right; one-line cells share a line."""
    out: list[Block] = []
    pending = sorted(band, key=lambda b: (b.box.y0, b.box.x0))
    while pending:
        first = pending.pop(0)
        row = [first] + [b for b in pending if b.box.y0 < first.box.centre_y]
        pending = [b for b in pending if b not in row]
        row.sort(key=lambda b: b.box.x0)
        if len(row) > 1 and all(len(b.lines) == 1 and b.table is None for b in row):
            merged = row[0].lines[0]
            for b in row[1:]:
                merged = join_row(merged, b.lines[0])
            out.append(Block([merged], merged.box))
        else:
            out.extend(row)
    return out


def reading_order(blocks: list[Block], depth: int = 0) -> list[Block]:
    """Prose columns are read one after the other; blocks crossing the gutter split bands."""
    if len(blocks) < 2:
        return list(blocks)
    x = _gutter(blocks) if depth < MAX_COLUMN_DEPTH and _is_prose(blocks) else None
    if x is None:
        return _rows(blocks)
    ordered: list[Block] = []
    band: list[Block] = []

    def flush() -> None:
        ordered.extend(reading_order([b for b in band if b.box.x1 <= x], depth + 1))
        ordered.extend(reading_order([b for b in band if b.box.x1 > x], depth + 1))
        band.clear()

    for block in sorted(blocks, key=lambda b: (b.box.y0, b.box.x0)):
        if _crosses(block, x):
            flush()
            ordered.append(block)
        else:
            band.append(block)
    flush()
    return ordered
