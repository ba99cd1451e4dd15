"""Pass 4, groups: a page's blocks, in reading order, to headings, list items,
paragraphs, listings and tables.

Inside a block a line starts a new group at a heading, a list marker, a gap, a
first-line indent or after a sentence ending short of the edge; across blocks a
paragraph PyMuPDF cut in two (at a column's foot, at a row of right-to-left
text) is joined again.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from documents.chunk_context import label_value
from documents.converters.pdf.headings import LevelOf
from documents.converters.pdf.lines import BULLET, NUMBERED, Block, Line
from documents.converters.pdf.ruled import RuledTable
from documents.converters.pdf.thresholds import (
    ALIGN_PT,
    FULL_LINES_MAX_SHARE,
    HANGING_END_EM,
    INDENT_EM,
    LISTING_GAP_LINES,
    LISTINGS_MAX_SHARE,
    MIN_FONT_SIZE_PT,
    MIN_LINE_HEIGHT_PT,
    PARAGRAPH_GAP_LINES,
    SAME_SIZE_SHARE,
    SENTENCE_BLOCK_MIN_LINES,
    SENTENCE_LINES_SHARE,
    SHORT_OF_EDGE,
    SLACK_PT,
    WRAPPED_EDGE,
)

_SENTENCE_END = (".", "!", "?", ":", ";", '."', ".”", ".)", "?”", "!”")
_RIGHT_TO_LEFT_END = (*_SENTENCE_END, "؟", "۔")  # Arabic and Urdu question mark and full stop
# letters of right-to-left scripts: Hebrew, Arabic, Syriac, Thaana, N'Ko, and their forms
_RIGHT_TO_LEFT_LETTER = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


class GroupKind(Enum):
    """What a group of lines is written as."""

    HEADING = "heading"
    ITEM = "item"  # a list item
    PARAGRAPH = "paragraph"
    LINE = "line"  # a ragged line (an address, a receipt) kept a line of its own
    CODE = "code"  # a listing in a fixed-width font
    TABLE = "table"


_TEXT = (GroupKind.PARAGRAPH, GroupKind.LINE)


@dataclass(slots=True)
class Group:
    """Lines written as one Markdown block (``table`` for a table, with no lines)."""

    kind: GroupKind
    lines: list[Line] = field(default_factory=list)
    level: int = 0  # a heading's
    table: RuledTable | None = None


def short_of_right(end: float, edge: float, width: float) -> bool:
    """Text ending at ``end`` stops short of the right ``edge`` of a text ``width`` wide."""
    return end < edge - SHORT_OF_EDGE * width


def short_of_left(start: float, edge: float, width: float) -> bool:
    """Right-to-left text ending at ``start`` stops short of the left ``edge``."""
    return start > edge + SHORT_OF_EDGE * width


def _gap_after(prev: Line | None, line: Line) -> bool:
    """A vertical gap wider than a paragraph's line spacing lies between the lines."""
    return prev is not None and line.box.y0 - prev.box.y1 > PARAGRAPH_GAP_LINES * max(
        prev.height, MIN_LINE_HEIGHT_PT
    )


def _same_size(a: Line, b: Line) -> bool:
    """The two lines are set in one type size (a footnote's smaller type is not)."""
    return abs(a.size - b.size) <= SAME_SIZE_SHARE * max(b.size, MIN_FONT_SIZE_PT)


def _indented(line: Line, left: float) -> bool:
    """The line starts right of the block's ``left`` edge: a first-line or hanging indent."""
    return line.box.x0 > left + INDENT_EM * line.size


def _new_paragraph(
    prev: Line,
    line: Line,
    following: Line | None,
    block: Block,
    first: Line,
    *,
    line_per_sentence: bool = False,
) -> bool:
    """Inside one block: a first-line indent (not a hanging one), a short sentence end,
    or a line back at the edge after the last line of a hanging indent (run-in items
    numbered "1 Title." with their text indented under the title); ``first`` is the
    first line of the paragraph ``prev`` ends. In a block set a sentence per line
    (:func:`_line_per_sentence`) every sentence's end before a capital is one."""
    if line_per_sentence and prev.text.rstrip().endswith(_SENTENCE_END) and line.text[:1].isupper():
        return True
    left = block.box.x0
    indent = (
        _indented(line, left)
        and not _indented(prev, left)
        and (following is None or not _indented(following, left))
    )
    short_end = short_of_right(prev.box.x1, block.box.x1, block.box.width)
    # a hanging indent's last line need not be short: it only stops before the edge
    hanging_ended = (
        prev.box.x1 < block.box.x1 - HANGING_END_EM * prev.size
        and prev is not first
        and not _indented(first, left)
        and _indented(prev, left)
        and not _indented(line, left)
    )
    return (
        indent or hanging_ended or (short_end and prev.text.rstrip().endswith((".", "!", "?", ":")))
    )


def _line_per_sentence(block: Block) -> bool:
    """Lines set one sentence each, ragged on the right (a list of maxims, a poem):
    four or more lines, nearly all ending a sentence, most short of the edge."""
    lines = block.lines
    if len(lines) < SENTENCE_BLOCK_MIN_LINES:
        return False
    ends = sum(ln.text.rstrip().endswith(_SENTENCE_END) for ln in lines)
    full = sum(ln.box.x1 >= block.box.x1 - SLACK_PT for ln in lines)
    return ends >= SENTENCE_LINES_SHARE * len(lines) and full <= FULL_LINES_MAX_SHARE * len(lines)


def _starts_item(prev: Line | None, line: Line, block: Block, kind: GroupKind | None) -> bool:
    """Bullets always start an item; '(1)'-style numbers only at a line start after a break."""
    if BULLET.match(line.text):
        return True
    if not NUMBERED.match(line.text):
        return False
    return (
        prev is None
        or kind is GroupKind.ITEM
        or short_of_right(prev.box.x1, block.box.x1, block.box.width)
    )


def _continues_item(prev: Line, line: Line, first: Line, block: Block) -> bool:
    """A list item's next line: indented under its text, or (an item set without a
    hanging indent) a lowercase continuation of a line that ran to the block's edge."""
    if line.box.x0 > first.box.x0 + SLACK_PT:
        return True
    wrapped = prev.box.x1 >= block.box.x1 - WRAPPED_EDGE * block.box.width
    return wrapped and line.text[:1].islower()


def _listing_line(lines: list[Line], i: int) -> bool:
    """A fixed-width line is a listing's when a neighbour in its block is fixed-width
    too, or it is a block of its own (a listing MuPDF cut into blocks): a lone
    address or name set in a fixed-width font inside prose stays prose."""
    return (
        len(lines) == 1
        or (i > 0 and lines[i - 1].mono)
        or (i + 1 < len(lines) and lines[i + 1].mono)
    )


@dataclass(frozen=True)
class _BlockReading:
    """What the lines of one block are read against."""

    block: Block
    code: bool  # fixed-width lines are listings in this document
    per_sentence: bool  # the block is set a sentence per line


def block_groups(block: Block, level_of: LevelOf, code: bool = False) -> list[Group]:
    """Split a block's lines into headings, list items, paragraphs and, where
    ``code``, listings (lines set in a fixed-width font). ``level_of`` is asked
    about every line, in order (it counts outline titles as it finds them)."""
    groups: list[Group] = []
    reading = _BlockReading(block, code, _line_per_sentence(block))
    prev: Line | None = None
    for i, line in enumerate(block.lines):
        level = level_of(line, block)
        last = groups[-1] if groups else None
        kind, joins = _place(reading, i, prev, last, level)
        if joins and last is not None:
            last.lines.append(line)
        else:
            groups.append(Group(kind, [line], level if kind is GroupKind.HEADING else 0))
        prev = line
    return groups


def _place(
    reading: _BlockReading, i: int, prev: Line | None, last: Group | None, level: int
) -> tuple[GroupKind, bool]:
    """The kind of group line ``i`` of the block belongs to, and whether it goes on
    in ``last``, the group of the line before it."""
    lines = reading.block.lines
    line = lines[i]
    gap = _gap_after(prev, line)
    if level:
        return GroupKind.HEADING, last is not None and _same_heading(last, level, gap)
    if reading.code and line.mono and _listing_line(lines, i):
        return GroupKind.CODE, last is not None and last.kind is GroupKind.CODE
    if _starts_item(prev, line, reading.block, last.kind if last is not None else None):
        return GroupKind.ITEM, False
    if prev is None or last is None or gap:
        return GroupKind.PARAGRAPH, False
    return _continued(reading, i, prev, last)


def _continued(reading: _BlockReading, i: int, prev: Line, last: Group) -> tuple[GroupKind, bool]:
    """Line ``i``, right under ``prev`` (no gap), goes on in the list item or the
    paragraph ``last``, or starts a paragraph, or a ragged line of its own."""
    lines = reading.block.lines
    line = lines[i]
    if last.kind is GroupKind.ITEM:
        joins = _continues_item(prev, line, last.lines[0], reading.block)
        return (GroupKind.ITEM, True) if joins else (GroupKind.PARAGRAPH, False)
    if last.kind not in _TEXT:
        return GroupKind.PARAGRAPH, False
    if label_value(prev.text) and label_value(line.text):
        # a form's "Label: value" lines, one under the other, each a line of its own
        return GroupKind.LINE, False
    following = lines[i + 1] if i + 1 < len(lines) else None
    first = last.lines[0]
    if _new_paragraph(
        prev, line, following, reading.block, first, line_per_sentence=reading.per_sentence
    ):
        return GroupKind.PARAGRAPH, False
    # a ragged line (an address, a receipt) stays a line of its own
    return (GroupKind.LINE, False) if _ragged(prev, lines, reading.block) else (last.kind, True)


def _same_heading(last: Group, level: int, gap: bool) -> bool:
    """A heading's next line at the same level, without a gap, goes on in it."""
    return last.kind is GroupKind.HEADING and last.level == level and not gap


def _row_left(lines: list[Line], line: Line) -> float:
    """The left edge of the row ``line`` is set in (MuPDF may cut a row of
    right-to-left text into lines at Latin words)."""
    return min(ln.box.x0 for ln in _row(lines, line))


def _row_right(lines: list[Line], line: Line) -> float:
    """The right edge of the row ``line`` is set in."""
    return max(ln.box.x1 for ln in _row(lines, line))


def _row(lines: list[Line], line: Line) -> Iterable[Line]:
    """The ``lines`` on ``line``'s row (their heights overlap)."""
    return (ln for ln in lines if ln.box.y0 < line.box.y1 and ln.box.y1 > line.box.y0)


def _ragged(prev: Line, lines: list[Line], block: Block) -> bool:
    """``prev`` ends its row well short of the block's far edge (an address, a
    receipt): the line after it is a line of its own. The far edge is the left one
    in right-to-left script, where a row MuPDF cut into lines counts whole."""
    width = block.box.width
    if _mostly_right_to_left(prev.text):
        return short_of_left(_row_left(lines, prev), block.box.x0, width)
    return short_of_right(prev.box.x1, block.box.x1, width)


def _mostly_right_to_left(text: str) -> bool:
    """Most of the line's letters are of a right-to-left script (Arabic, Hebrew)."""
    if not _RIGHT_TO_LEFT_LETTER.search(text):
        return False  # most lines: one scan in C
    letters = [unicodedata.bidirectional(ch) for ch in text if ch.isalpha()]
    return bool(letters) and 2 * sum(kind in ("R", "AL") for kind in letters) > len(letters)


def _continues(prev: Group, group: Group, blocks: list[Block]) -> bool:
    """A paragraph PyMuPDF split into two blocks: same column, no gap, lowercase
    start; in right-to-left script, which has no case (MuPDF gives each wrapped
    line of Arabic a block of its own), see :func:`_continues_right_to_left`."""
    if prev.kind not in (*_TEXT, GroupKind.ITEM) or group.kind is not GroupKind.PARAGRAPH:
        return False
    last, first = prev.lines[-1], group.lines[0]
    gap = first.box.y0 - last.box.y1
    if not -SLACK_PT <= gap <= PARAGRAPH_GAP_LINES * max(last.height, MIN_LINE_HEIGHT_PT):
        return False
    if _mostly_right_to_left(last.text) and _mostly_right_to_left(first.text):
        return _continues_right_to_left(prev, group, blocks)
    return (
        first.box.x0 >= prev.lines[0].box.x0 - ALIGN_PT
        and first.box.x0 <= last.box.x1
        and first.text[:1].islower()
    )


def _continues_right_to_left(prev: Group, group: Group, blocks: list[Block]) -> bool:
    """The row before runs to the column's far (left) end without a sentence's end
    (the column: the page's ``blocks`` sharing its right edge), and the next starts
    at the same right edge, in the same type size."""
    last, first = prev.lines[-1], group.lines[0]
    right = _row_right(prev.lines, last)
    left = min(
        (b.box.x0 for b in blocks if b.table is None and abs(b.box.x1 - right) <= ALIGN_PT),
        default=min(ln.box.x0 for ln in prev.lines),
    )
    # the row reaches the column's far (left) end, within SHORT_OF_EDGE of its width
    wrapped = _row_left(prev.lines, last) <= left + SHORT_OF_EDGE * (right - left)
    return (
        wrapped
        and not last.text.rstrip().endswith(_RIGHT_TO_LEFT_END)
        and abs(_row_right(group.lines, first) - right) <= ALIGN_PT
        and _same_size(first, last)
    )


def open_ended(group: Group) -> bool:
    """A paragraph cut off, not finished: of two lines or more (one line's width
    says nothing: a footnote, a caption), its last runs to the paragraph's right
    edge and ends without a sentence's end."""
    if group.kind is not GroupKind.PARAGRAPH or len(group.lines) < 2:
        return False
    lines = group.lines
    last = lines[-1]
    right = max(ln.box.x1 for ln in lines)
    width = right - min(ln.box.x0 for ln in lines)
    full = last.box.x1 >= right - SHORT_OF_EDGE * width  # runs to the paragraph's right edge
    return full and not last.text.rstrip().endswith(_SENTENCE_END)


def carries_on(prev: Group, group: Group) -> bool:
    """``group`` opens mid-sentence (a lowercase first letter) in the type of the
    paragraph ``prev`` was cut from (not a footnote's smaller size)."""
    if group.kind is not GroupKind.PARAGRAPH or not group.lines[0].text[:1].islower():
        return False
    return _same_size(group.lines[0], prev.lines[-1])


def _continues_in_next_column(prev: Group, group: Group) -> bool:
    """A paragraph cut at the foot of a column that goes on at the top of the next:
    the new column starts higher up and to the right of where the paragraph stopped."""
    if not (open_ended(prev) and carries_on(prev, group)):
        return False
    last, first = prev.lines[-1], group.lines[0]
    return first.box.y0 < last.box.y0 and first.box.x0 > last.box.centre_x


def _same_listing(prev: Group, group: Group) -> bool:
    """Blocks MuPDF cut one listing into (at an indent, at a blank line): the next
    starts below the last, within a few lines, over the same columns."""
    if prev.kind is not GroupKind.CODE or group.kind is not GroupKind.CODE:
        return False
    last, first = prev.lines[-1], group.lines[0]
    gap = first.box.y0 - last.box.y1
    left = min(ln.box.x0 for ln in prev.lines)
    right = max(ln.box.x1 for ln in prev.lines)
    return (
        -SLACK_PT <= gap <= LISTING_GAP_LINES * max(last.height, MIN_LINE_HEIGHT_PT)
        and first.box.x0 < right
        and first.box.x1 > left
    )


def _goes_on(prev: Group, group: Group, blocks: list[Block]) -> bool:
    """``group`` is more of ``prev``: a paragraph split across blocks or columns, or
    a listing cut into blocks."""
    return (
        _continues(prev, group, blocks)
        or _continues_in_next_column(prev, group)
        or _same_listing(prev, group)
    )


def page_groups(ordered: list[Block], level_of: LevelOf, code: bool = False) -> list[Group]:
    """The groups of a page's blocks in reading order, a group that goes on from the
    one before joined to it."""
    groups: list[Group] = []
    for block in ordered:
        if block.table is not None:
            groups.append(Group(GroupKind.TABLE, table=block.table))
            continue
        for group in block_groups(block, level_of, code):
            if groups and _goes_on(groups[-1], group, ordered):
                groups[-1].lines.extend(group.lines)
            else:
                groups.append(group)
    # a fixed-width line alone, neither beside nor under another, is prose
    return [
        Group(GroupKind.PARAGRAPH, g.lines) if g.kind is GroupKind.CODE and len(g.lines) == 1 else g
        for g in groups
    ]


def listings_stand_out(pages: list[list[Block]]) -> bool:
    """Fixed-width lines are code listings only where they are the exception: a
    receipt or a typed letter set wholly in Courier is prose, not code."""
    mono = total = 0
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                total += len(line.text)
                mono += len(line.text) if line.mono else 0
    return 0 < mono < LISTINGS_MAX_SHARE * total
