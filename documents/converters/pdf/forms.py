"""Borderless label/value forms: rows of two cells, labels in one column, values in
another, without any rules.

A form set as a label column and a value column ("Customer name  Dmitri Silva"
over "Phone  +1 555 0100") has too few columns to head a borderless table
(``aligned``), and read as text its rows run together into one paragraph, or
a row of a block beside it joins one of its own. Here a line of two cells
(``aligned.line_cells``: a gap wider than a space between them), or of two such
pairs where two forms stand side by side on one row, holds rows of forms; rows one
under the other, at the form's row pitch, whose labels start at one x and whose
values start (or end) at one x, are one form, and a line of one cell under a
value is more of it (an address). Rows of another text column beside a form are
passed over, so two forms side by side are two tables; a line across the form's
columns ends it. Each form becomes a two-column table under an empty header, as a
DOCX or HTML form is written: each row its own Markdown line, each cell its own
box. The text a form takes leaves its lines; what is left of a line stays text.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from documents.converters.pdf.aligned import line_cells
from documents.converters.pdf.geometry import Box, union
from documents.converters.pdf.lines import MARKER_ONLY, Block, Line, Part
from documents.converters.pdf.ruled import RuledTable, TableRow
from documents.converters.pdf.thresholds import (
    CELL_PAD_PT,
    COLUMN_TOLERANCE_PT,
    FIRST_ROW_GAP_LINES,
    MAX_CELL_CHARS,
    MAX_LABEL_CHARS,
    MIN_FORM_ROWS,
    PITCH_SLACK,
    ROW_GAP_MIN_PT,
)

# two rows side by side on one line, at most: two labels, two values, three blanks
_MAX_ROW_CHARS = 2 * (MAX_LABEL_CHARS + MAX_CELL_CHARS) + 3


@dataclass(frozen=True)
class _Piece:
    """Part of a line: a form row's label and value (``pair``), or, if the line
    holds none, the whole line."""

    line: Line
    box: Box
    pair: tuple[Box, Box] | None = None
    cells: int = 1  # of the whole line, when it is no pair (0: not counted, too long)

    @property
    def centre_y(self) -> float:
        return self.line.box.centre_y


@dataclass
class _Row:
    """A form's row: its label and value, and the lines its value wraps onto."""

    piece: _Piece
    wrapped: list[_Piece] = field(default_factory=list)

    @property
    def label(self) -> Box:
        assert self.piece.pair is not None
        return self.piece.pair[0]

    @property
    def value(self) -> Box:
        assert self.piece.pair is not None
        return self.piece.pair[1]

    @property
    def pieces(self) -> list[_Piece]:
        return [self.piece, *self.wrapped]

    @property
    def box(self) -> Box:
        return union([piece.box for piece in self.pieces])


@dataclass
class _Form:
    """The rows a form takes, as they are read down the page."""

    rows: list[_Row]
    pitch: float | None = None  # the smallest gap between two lines so far
    left: float = 0.0  # where the labels start
    right: float = 0.0  # where the rightmost value ends
    starts: list[float] = field(default_factory=list)  # where values start, one x each
    ends: list[float] = field(default_factory=list)  # where values end, one x each

    def __post_init__(self) -> None:
        first = self.rows[0]
        self.left, self.right = first.label.x0, first.box.x1
        self.starts, self.ends = [first.value.x0], [first.value.x1]

    def beside(self, piece: _Piece) -> bool:
        """``piece`` lies in another text column, left or right of the form."""
        return piece.box.x1 < self.left - COLUMN_TOLERANCE_PT or (
            piece.box.x0 > self.right + COLUMN_TOLERANCE_PT
        )

    def take(self, piece: _Piece) -> bool:
        """Take ``piece`` as the form's next row, or as more of the last row's value
        (one cell starting where that value starts: an address under its first
        line); False if the form ends above it: too far below, or off the form's
        label and value columns."""
        last = self.rows[-1].pieces[-1].line
        gap = piece.centre_y - last.box.centre_y
        limit = (
            FIRST_ROW_GAP_LINES * last.height if self.pitch is None else PITCH_SLACK * self.pitch
        )
        if gap <= ROW_GAP_MIN_PT or gap > limit:
            return False
        if piece.pair is not None and self._aligned(piece.pair):
            self.rows.append(_Row(piece))
            self._value_add(piece.pair[1])
        elif piece.pair is None and self._wraps(piece):
            self.rows[-1].wrapped.append(piece)
        else:
            return False
        self.right = max(self.right, piece.box.x1)
        self.pitch = gap if self.pitch is None else min(self.pitch, gap)
        return True

    def _value_add(self, value: Box) -> None:
        """Note where ``value`` starts and ends, if no value did there yet."""
        for edges, x in ((self.starts, value.x0), (self.ends, value.x1)):
            if not _near(edges, x):
                edges.append(x)

    def _aligned(self, pair: tuple[Box, Box]) -> bool:
        """The row's label starts where the labels start; its value starts where a
        value starts, or ends where one ends (amounts set flush right)."""
        label, value = pair
        if abs(label.x0 - self.left) > COLUMN_TOLERANCE_PT:
            return False
        return _near(self.starts, value.x0) or _near(self.ends, value.x1)

    def _wraps(self, piece: _Piece) -> bool:
        """``piece`` is a line of one cell starting where the last row's value starts."""
        return (
            piece.cells == 1
            and abs(piece.box.x0 - self.rows[-1].value.x0) <= COLUMN_TOLERANCE_PT
            and len(piece.line.text) <= MAX_CELL_CHARS
        )


def _near(edges: list[float], x: float) -> bool:
    """``x`` is one of the ``edges``, within a column's tolerance."""
    return any(abs(x - edge) <= COLUMN_TOLERANCE_PT for edge in edges)


def form_tables(blocks: list[Block]) -> list[RuledTable]:
    """The borderless label/value forms among ``blocks`` (a page's text blocks);
    the text they take leaves the blocks (changed in place)."""
    lines = [line for block in blocks if block.table is None for line in block.lines]
    if sum(_may_pair(line) for line in lines) < MIN_FORM_ROWS:
        return []  # most pages: no form
    pieces = [piece for line in lines for piece in _pieces(line)]
    if sum(piece.pair is not None for piece in pieces) < MIN_FORM_ROWS:
        return []
    pieces.sort(key=lambda p: (p.centre_y, p.box.x0))
    centres = [piece.centre_y for piece in pieces]
    tables: list[RuledTable] = []
    taken: set[int] = set()
    read: set[int] = set()  # rows of a form read as lines: no form starts there again
    for index, piece in enumerate(pieces):
        if piece.pair is None or id(piece) in taken or id(piece) in read:
            continue
        form = _form_from(pieces, index, taken)
        own = {id(p) for row in form.rows for p in row.pieces}
        table = None if _colon_form(form) else _table(form.rows)
        if table is None or _covers_others(table.bbox, own, pieces, centres):
            read |= own  # linear on a page of thousands of rows
            continue
        tables.append(table)
        taken |= own
    if tables:
        _text_taken(blocks, [p for p in pieces if id(p) in taken])
    return tables


def _colon_form(form: _Form) -> bool:
    """Every label ends in a colon: the page itself sets each label apart from its
    value, and the form's lines are read as "Label: value" lines of their own
    (``groups``), a wrapped value running on in its line."""
    return all(_text(row.piece.line, row.label).endswith(":") for row in form.rows)


def _may_pair(line: Line) -> bool:
    """The line could hold form rows: drawn in two parts or more, short enough for
    two of them side by side (a line of prose is neither)."""
    return len(line.parts) >= 2 and len(line.text) <= _MAX_ROW_CHARS


def _pieces(line: Line) -> list[_Piece]:
    """The line's form rows: its cells two by two, each a short label that is no
    list marker ("1.", "•") and a value of a cell's length; else the whole line."""
    if not _may_pair(line):  # one cell, or too long to be cells: no cells counted
        return [_Piece(line, line.box, cells=1 if len(line.parts) == 1 else 0)]
    cells = line_cells(line)
    if len(cells) % 2 or not cells:
        return [_Piece(line, line.box, cells=len(cells))]
    pairs = [(cells[k], cells[k + 1]) for k in range(0, len(cells), 2)]
    for label, value in pairs:
        label_text, value_text = _text(line, label), _text(line, value)
        if len(label_text) > MAX_LABEL_CHARS or len(value_text) > MAX_CELL_CHARS:
            return [_Piece(line, line.box, cells=len(cells))]
        if MARKER_ONLY.match(label_text) or not any(ch.isalnum() for ch in label_text):
            return [_Piece(line, line.box, cells=len(cells))]  # a list marker, a tick box
    return [_Piece(line, union(pair), pair=pair, cells=2) for pair in pairs]


def _text(line: Line, cell: Box) -> str:
    """The line's text in ``cell``."""
    inside = [(s, e) for s, e, box in line.parts if cell.x0 <= box.x0 < cell.x1]
    return line.text[min(s for s, _ in inside) : max(e for _, e in inside)].strip()


def _form_from(pieces: list[_Piece], first: int, taken: set[int]) -> _Form:
    """The form whose first row is ``pieces[first]``: the rows below it that it
    takes, up to the first piece across its columns that is not one of its rows."""
    form = _Form([_Row(pieces[first])])
    top = pieces[first].centre_y
    for piece in pieces[first + 1 :]:
        if form.beside(piece) or piece.centre_y <= top:
            continue
        if id(piece) in taken or not form.take(piece):
            break
    return form


def _covers_others(bbox: Box, own: set[int], pieces: list[_Piece], centres: list[float]) -> bool:
    """Text that is none of the form's rows lies inside its box: it would be lost
    or read into a cell. ``centres``: the pieces' centres, in order."""
    within = pieces[bisect_left(centres, bbox.y0) : bisect_right(centres, bbox.y1)]
    return any(
        id(piece) not in own and bbox.x0 <= piece.box.centre_x <= bbox.x1 for piece in within
    )


def _table(rows: list[_Row]) -> RuledTable | None:
    """The two-column grid of the form's ``rows`` under an empty header; None if too
    few rows, or if a label reaches past where a value starts (no column edge)."""
    if len(rows) < MIN_FORM_ROWS:
        return None
    label_end = max(row.label.x1 for row in rows)
    value_start = min(min([row.value.x0, *(p.box.x0 for p in row.wrapped)]) for row in rows)
    if label_end >= value_start:
        return None
    left = min(row.label.x0 for row in rows) - CELL_PAD_PT
    right = max(row.box.x1 for row in rows) + CELL_PAD_PT
    middle = (label_end + value_start) / 2
    grid = [TableRow(cells=[None, None])]  # a form starts with data: an empty header
    grid += [
        TableRow(cells=[_cell(left, middle, row.box), _cell(middle, right, row.box)])
        for row in rows
    ]
    every = union([row.box for row in rows])
    return RuledTable(Box(left, every.y0 - CELL_PAD_PT, right, every.y1 + CELL_PAD_PT), grid)


def _cell(left: float, right: float, row: Box) -> Box:
    """The cell between two column edges, as tall as its row's text."""
    return Box(left, row.y0 - CELL_PAD_PT, right, row.y1 + CELL_PAD_PT)


def _text_taken(blocks: list[Block], taken: list[_Piece]) -> None:
    """The forms' text leaves its blocks: a line wholly taken goes, a line of which a
    form took part keeps the rest (a form's row beside another's)."""
    boxes: dict[int, list[Box]] = {}
    for piece in taken:
        boxes.setdefault(id(piece.line), []).append(piece.box)
    for block in blocks:
        kept = [
            rest for line in block.lines if (rest := _rest(line, boxes.get(id(line)))) is not None
        ]
        if len(kept) < len(block.lines) or any(
            a is not b for a, b in zip(kept, block.lines, strict=False)
        ):
            block.lines_before_tables = block.line_count
        block.lines = kept
        if kept:
            block.box = union([line.box for line in kept])
    blocks[:] = [block for block in blocks if block.lines]


def _rest(line: Line, taken: list[Box] | None) -> Line | None:
    """What is left of ``line`` outside the ``taken`` boxes; None if nothing."""
    if not taken:
        return line
    kept = [
        part
        for part in line.parts
        if not any(b.x0 <= part.box.x0 < b.x1 + CELL_PAD_PT for b in taken)
    ]
    kept = [part for part in kept if line.text[part.start : part.end].strip()]
    if not kept:
        return None
    text, parts = "", []
    for start, end, box in sorted(kept):
        if text:
            text += " "
        parts.append(Part(len(text), len(text) + end - start, box))
        text += line.text[start:end]
    return Line(text, union([p.box for p in parts]), line.size, line.bold, parts, line.mono)
