"""Pass 5, Markdown: each group written as Markdown lines, every span with its box.

Spans go to ``MarkdownBuilder`` as ``(start, end, page, box)`` relative to the
line written, so every Markdown character that came from the page keeps the
PDF box it was drawn in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from documents.converters._hyphenation import LineEndHyphens
from documents.converters._mdbuild import MarkdownBuilder, escape_line_start
from documents.converters.pdf.annotations import Note
from documents.converters.pdf.cells import CellWords
from documents.converters.pdf.geometry import Box
from documents.converters.pdf.groups import Group, GroupKind
from documents.converters.pdf.lines import BULLET, Line, Part, join_lines
from documents.converters.pdf.ruled import RuledTable
from documents.converters.pdf.thresholds import (
    MAX_CODE_INDENT,
    MIN_CHAR_ADVANCE_PT,
    PARAGRAPH_GAP_LINES,
)

Span = tuple[int, int, int, tuple[float, float, float, float]]  # as MarkdownBuilder takes it
_NUMBERED_ITEM = re.compile(r"\d{1,3}[.)] ")  # an item numbered as Markdown numbers one
_ITEM_MARK = "- "  # a Markdown list item's marker
_FENCE_MIN = 3  # backticks of a code fence (CommonMark)


def _spans(parts: Iterable[Part], page_no: int, shift: int = 0) -> list[Span]:
    """A line's parts as spans of the Markdown line, ``shift`` characters on."""
    return [(s + shift, e + shift, page_no, box.as_tuple()) for s, e, box in parts]


def text_write(
    md: MarkdownBuilder,
    page_no: int,
    group: Group,
    hyphens: LineEndHyphens,
    *,
    continues: bool = False,
) -> None:
    """One group of text as Markdown; ``continues``: the paragraph before it (on the
    page before) goes on in it, so it follows on the next line with no blank between."""
    line = join_lines(group.lines, hyphens.keeps_hyphen)
    if group.kind is GroupKind.HEADING:
        md.heading(group.level, line.text, page_no, _spans(line.parts, page_no))
        return
    if group.kind is GroupKind.ITEM:
        text, shift = _item_text(line.text)
    else:
        text = escape_line_start(line.text)
        shift = len(text) - len(line.text)
    if group.kind is not GroupKind.LINE and not continues:
        md.blank(page_no)
    spans = _spans(line.parts, page_no, shift)
    md.line(text, page_no, [(max(s, 0), e, p, b) for s, e, p, b in spans if e > 0])


def _item_text(text: str) -> tuple[str, int]:
    """A list item's text with a Markdown marker (a bullet becomes "- "; "1." stays),
    and how far its characters moved."""
    bullet = BULLET.match(text)
    if bullet:
        return _ITEM_MARK + text[bullet.end() :], len(_ITEM_MARK) - bullet.end()
    if not _NUMBERED_ITEM.match(text):
        return _ITEM_MARK + text, len(_ITEM_MARK)
    return text, 0


def code_write(md: MarkdownBuilder, page_no: int, lines: list[Line]) -> None:
    """A fenced block, a Markdown line per listing line (blank ones too), each
    indented by its distance from the listing's left edge in characters of the
    font, its inner blanks as set (aligned comments stay aligned)."""
    left = min(line.box.x0 for line in lines)
    advance = _char_advance(lines)
    longest_run = max((len(run) for ln in lines for run in re.findall("`+", ln.text)), default=0)
    fence = "`" * max(_FENCE_MIN, longest_run + 1)
    md.blank(page_no)
    md.line(fence, page_no)
    previous: Line | None = None
    for line in lines:
        if previous is not None and line.box.y0 - previous.box.y1 > (
            PARAGRAPH_GAP_LINES * previous.height
        ):
            md.line("", page_no)  # a blank line of the listing
        previous = line
        indent = " " * min(round((line.box.x0 - left) / advance) + line.lead, MAX_CODE_INDENT)
        text = line.spaced or line.text
        parts = [Part(0, len(text), line.box)] if line.spaced else line.parts
        md.line(indent + text, page_no, _spans(parts, page_no, len(indent)))
    md.line(fence, page_no)
    md.blank(page_no)


def _char_advance(lines: list[Line]) -> float:
    """The width of one character of the listing's font: the median over its lines."""
    widths = sorted(ln.box.width / (ln.lead + len(ln.spaced or ln.text)) for ln in lines if ln.text)
    return max(widths[len(widths) // 2], MIN_CHAR_ADVANCE_PT)


def table_write(md: MarkdownBuilder, words: CellWords, page_no: int, table: RuledTable) -> int:
    """Cell text is re-read from each cell box so characters keep their visual order;
    1 if the table was written, 0 if all its cells are empty.

    A cell merged across some of its row's columns ("Europe" over four countries)
    fills each of them, with its box, as a DOCX's merged cells do, so every column
    reads whole; a cell spanning the whole row (a title) stays in the first."""
    rows = [[words.inside(box) for box in row.cells] for row in table.rows]
    if not any(any(row) for row in rows):
        return 0
    width = max(len(r) for r in rows)
    md.blank(page_no)
    for i, (cells, geometry) in enumerate(zip(rows, table.rows, strict=True)):
        boxes = list(geometry.cells)
        if sum(box is not None for box in boxes) > 1:  # partly merged: fill the covered
            _merged_filled(cells, boxes)
        text, spans = _table_line(cells, boxes, width, page_no)
        md.line(text, page_no, spans)
        if i == 0:
            md.line("|" + " --- |" * width, page_no)
    md.blank(page_no)
    return 1


def _merged_filled(cells: list[str], boxes: list[Box | None]) -> None:
    """Columns a merged cell covers (no box of their own) take its text and box."""
    for j in range(1, len(boxes)):
        if boxes[j] is None and boxes[j - 1] is not None:
            boxes[j], cells[j] = boxes[j - 1], cells[j - 1]


def _table_line(
    cells: list[str], boxes: list[Box | None], width: int, page_no: int
) -> tuple[str, list[Span]]:
    """A table row as a Markdown line, and a span per filled cell."""
    text, spans = "|", []
    for j in range(width):
        cell = cells[j] if j < len(cells) else ""
        text += " "
        box = boxes[j] if j < len(boxes) else None
        if cell and box is not None:
            spans.append((len(text), len(text) + len(cell), page_no, box.as_tuple()))
        text += cell + " |"
    return text, spans


def comments_write(md: MarkdownBuilder, notes: list[Note]) -> None:
    """The notes after the body, under ``# Comments``, each boxed on its page."""
    for index, note in enumerate(notes):
        if index == 0:
            md.heading(1, "Comments", note.page_number)
        md.line(
            note.text,
            note.page_number,
            [(0, len(note.text), note.page_number, note.box.as_tuple())],
        )
    md.blank()
