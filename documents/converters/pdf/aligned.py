"""Borderless tables: rows of cells aligned in columns, without any rules.

A table drawn without rules has nothing for ``ruled`` to follow. PyMuPDF
gives each cell its own line, and the extract pass joins the lines of one row
into one ``Line`` whose ``parts`` keep every cell's box; read as text, the
row's cells run together, a sparse table's columns are lost and a bold header
row reads as a heading. Here a row of at least ``MIN_COLUMNS`` separate short
cells fixes the columns; the rows below it belong to the table while each of
their cells lies under exactly one header cell (left, centred or right
aligned), and the gap to the row above stays near the table's row pitch. Rows of
another text column beside the table are passed over. Cells may be missing (a
sparse table); a table needs at least ``MIN_BODY_ROWS`` rows under its header,
or one row filling ``MIN_COLUMNS_OF_ONE_ROW`` or more named columns.
A header may name only the value columns: row labels standing left of its
first cell ("Parts", "Body Labor" under "Hours  Rate  Cost") become the
table's first column, a label alone on its row included while values follow.
A note in smaller type under a row ("(Runtime: 142 min)" under a film's title)
is a row of its own in the column it starts in. The cell boxes then go through
the same path as ruled tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import cast

from documents.converters.pdf.geometry import Box, union
from documents.converters.pdf.lines import Block, Line
from documents.converters.pdf.ruled import RuledTable, TableRow
from documents.converters.pdf.thresholds import (
    CELL_GAP_EM,
    CELL_PAD_PT,
    COLUMN_TOLERANCE_PT,
    FIRST_ROW_GAP_LINES,
    MAX_CELL_CHARS,
    MIN_BODY_ROWS,
    MIN_COLUMNS,
    MIN_COLUMNS_OF_ONE_ROW,
    NOTE_SIZE_RATIO,
    OVERPRINT_PT,
    PITCH_SLACK,
    PROBE_WIDTH_PT,
    ROW_GAP_MIN_PT,
)

_STUB = -1  # the column of a row label that starts left of every header cell
_NUMBER = re.compile(r"[\d\s$€£%+\-−.,:/()]*\d[\d\s$€£%+\-−.,:/()]*")


@dataclass(frozen=True)
class _Row:
    """A line read as a table row: its cells, left to right."""

    line: Line
    cells: list[Box]

    @property
    def centre_y(self) -> float:
        return self.line.box.centre_y


Placed = tuple[_Row, list[int]]  # a body row and the column of each of its cells


@dataclass
class _Body:
    """The rows a table takes under its ``header``, as they are read down the page."""

    header: _Row
    taken: set[int]  # indexes of the header and the rows taken
    previous: float  # the centre of the last row taken
    bottom: float  # and its bottom
    rows: list[Placed] = field(default_factory=list)
    notes: set[int] = field(default_factory=set)  # indexes in ``rows`` of notes under a row
    pitch: float | None = None  # the smallest gap between two rows so far
    labels: float | None = None  # where the row labels start, once a row has one
    last_row: _Row | None = None  # the last row taken that is no note
    overlapped: bool = False  # the row that ended the table was drawn over the one above

    @property
    def columns(self) -> list[Box]:
        return self.header.cells

    def beside(self, row: _Row) -> bool:
        """``row`` belongs to another text column, left or right of the table (a
        row label of the table's own, left of it, does not)."""
        left, right = self.header.line.box.x0, self.header.line.box.x1
        label = (
            self.labels is not None and abs(row.line.box.x0 - self.labels) <= COLUMN_TOLERANCE_PT
        )
        return (
            row.line.box.x1 < left - COLUMN_TOLERANCE_PT and not label
        ) or row.line.box.x0 > right + COLUMN_TOLERANCE_PT

    def take(self, index: int, row: _Row) -> bool:
        """Take ``row`` (``rows[index]``) into the table; False if the table ends
        above it: too far below, drawn over the row above, prose, or off the grid."""
        gap = row.centre_y - self.previous
        limit = (
            FIRST_ROW_GAP_LINES * self.header.line.height
            if self.pitch is None
            else PITCH_SLACK * self.pitch
        )
        # text drawn over the row above: no clean grid (its words would cross cells)
        self.overlapped = row.line.box.y0 < self.bottom - OVERPRINT_PT
        if self.overlapped or gap <= ROW_GAP_MIN_PT or gap > limit or not _short(row):
            return False
        placed = self._placed(row)
        note = _note_column(row, self.last_row, self.columns) if self.last_row is not None else None
        if note is not None:
            self.notes.add(len(self.rows))
            placed = [note]
        elif None in placed or len(set(placed)) != len(placed):
            return False
        else:
            self.pitch = gap if self.pitch is None else min(self.pitch, gap)
            self.last_row = row
        self.rows.append((row, cast(list[int], placed)))
        self.taken.add(index)
        self.previous, self.bottom = row.centre_y, row.line.box.y1
        return True

    def _placed(self, row: _Row) -> list[int | None]:
        """The column of each cell of ``row``; a first cell left of every named
        column is a row label (``_STUB``)."""
        placed = [_column_of(cell, self.columns) for cell in row.cells]
        if not placed or placed[0] is not None:
            return placed
        first = row.cells[0]
        if first.x1 < self.columns[0].x0 - COLUMN_TOLERANCE_PT:
            placed[0] = _STUB
            self.labels = first.x0 if self.labels is None else min(self.labels, first.x0)
        return placed

    def trim(self) -> None:
        """Rows at the foot that are text after the table: a lone row label, and
        notes where no row above has one (a caption), as notes belong to the table
        only where rows before have them too (each film's runtime under its title)."""
        while self.rows and self.rows[-1][1] == [_STUB]:
            self._drop_last()
        rows_end = max((k for k in range(len(self.rows)) if k not in self.notes), default=-1) + 1
        if self.notes and min(self.notes) >= rows_end:
            for _ in range(len(self.rows) - rows_end):
                self._drop_last()
            self.notes.clear()

    def _drop_last(self) -> None:
        self.rows.pop()
        self.taken.remove(max(self.taken))

    def proper(self) -> list[Placed]:
        """The rows that are no notes."""
        return [entry for k, entry in enumerate(self.rows) if k not in self.notes]


def aligned_tables(blocks: list[Block]) -> list[RuledTable]:
    """The borderless tables among ``blocks`` (the text blocks of one page)."""
    lines = [line for block in blocks if block.table is None for line in block.lines]
    if not any(len(line.parts) >= MIN_COLUMNS for line in lines):
        return []  # no line could head a table: most pages of prose
    rows = sorted((_row(line) for line in lines), key=lambda r: r.centre_y)
    tables: list[RuledTable] = []
    consumed: set[int] = set()
    for first in range(len(rows)):
        if first in consumed:
            continue
        table, used = _table_from(rows, first, consumed)
        if table is not None:
            tables.append(table)
            consumed |= used
    return tables


def _row(line: Line) -> _Row:
    """The line as a row of its cells."""
    return _Row(line, line_cells(line))


def line_cells(line: Line) -> list[Box]:
    """The line's cells: its parts, joined where the gap between them is a space."""
    cells: list[Box] = []
    for start, end, box in sorted(line.parts, key=lambda p: p.box.x0):
        if not line.text[start:end].strip():
            continue
        if cells and box.x0 - cells[-1].x1 < CELL_GAP_EM * line.size:
            cells[-1] = union([cells[-1], box])
        else:
            cells.append(box)
    return cells


def _short(row: _Row) -> bool:
    """No cell of the row holds more than a cell's worth of text."""
    return len(row.line.text) <= MAX_CELL_CHARS * max(1, len(row.cells))


def _column_of(cell: Box, columns: list[Box]) -> int | None:
    """The column of ``cell``: the one header cell it lies under (left, centred or
    right aligned); failing that, the one whose start it follows without reaching
    the next header cell (a short value right-aligned in a wide column). None if
    it lies under two, or before the first."""
    under = [
        index
        for index, column in enumerate(columns)
        if cell.x0 < column.x1 + COLUMN_TOLERANCE_PT and cell.x1 > column.x0 - COLUMN_TOLERANCE_PT
    ]
    if under:
        return under[0] if len(under) == 1 else None
    after = [i for i, column in enumerate(columns) if cell.x0 >= column.x0 - COLUMN_TOLERANCE_PT]
    return after[-1] if after else None


def _numeric(line: Line, cell: Box) -> bool:
    """The line's text in ``cell`` is a figure (an amount, a date, a count)."""
    text = "".join(
        line.text[start:end] for start, end, box in line.parts if cell.x0 <= box.x0 < cell.x1
    )
    return bool(_NUMBER.fullmatch(text.strip()))


def _heads_columns(header: _Row, body: list[Placed]) -> bool:
    """The first row names the columns: set in bold unlike the rows below, or free
    of the numbers that fill its columns below. A table of contents or a form
    starts with data."""
    if header.line.bold and not all(row.line.bold for row, _ in body):
        return True
    if any(_numeric(header.line, cell) for cell in header.cells):
        return False
    return any(_numeric(row.line, row.cells[k]) for row, placed in body for k in range(len(placed)))


def _table_from(
    rows: list[_Row], first: int, consumed: set[int]
) -> tuple[RuledTable | None, set[int]]:
    """The table whose header is ``rows[first]``, and the rows it takes."""
    header = rows[first]
    if len(header.cells) < MIN_COLUMNS or not _short(header):
        return None, set()
    body = _Body(header, {first}, header.centre_y, header.line.box.y1)
    for index in range(first + 1, len(rows)):
        if index in consumed or body.beside(rows[index]):
            continue
        if not body.take(index, rows[index]):
            break
    body.trim()
    if not _heads_columns(header, body.proper()) and _form_above(rows, first, body):
        return None, set()  # forms side by side, one starting lower: ``forms`` reads them
    table = _table(body)
    return (None, set()) if table is None else (table, body.taken)


def _form_above(rows: list[_Row], first: int, body: _Body) -> bool:
    """Rows right above a table that starts with data go on in its columns, up to a
    label and its value under its first two: the table is the lower part of a form
    that another form beside it joins on the way down, not a grid of its own."""
    below = body.header
    for row in reversed(rows[:first]):
        if body.beside(row):
            continue
        gap = below.centre_y - row.centre_y
        limit = (
            FIRST_ROW_GAP_LINES * row.line.height
            if body.pitch is None
            else PITCH_SLACK * body.pitch
        )
        placed = [_column_of(cell, body.columns) for cell in row.cells]
        if gap > limit or not _short(row) or None in placed or len(set(placed)) != len(placed):
            return False
        if placed == [0, 1]:
            return True
        below = row
    return False


def _table(body: _Body) -> RuledTable | None:
    """The grid of ``body``'s rows; None if too few rows, or if columns overlap."""
    proper = body.proper()
    if len(proper) < MIN_BODY_ROWS and (body.overlapped or not _one_full_row(body.header, proper)):
        return None
    # row labels, if any, are the first column: the header has no cell over them
    stub = any(_STUB in placed for _, placed in body.rows)
    placed_rows = [(row, [column + stub for column in placed]) for row, placed in body.rows]
    edges = _edges(_column_cells(body, placed_rows, stub))
    if edges is None:
        return None
    table_rows = _grid_rows(body, placed_rows, edges)
    if not _heads_columns(body.header, proper):  # data from the first row on: an empty header
        table_rows.insert(0, TableRow(cells=[None] * (len(edges) - 1)))
    every = union([body.header.line.box] + [r.line.box for r, _ in body.rows])
    bbox = Box(edges[0], every.y0 - CELL_PAD_PT, edges[-1], every.y1 + CELL_PAD_PT)
    return RuledTable(bbox=bbox, rows=table_rows)


def _column_cells(body: _Body, placed_rows: list[Placed], stub: bool) -> list[list[Box]]:
    """The cells of each column: its header cell and the cells below it. A note runs
    on over the next columns: it gives no column its width."""
    cells: list[list[Box]] = ([[]] if stub else []) + [[c] for c in body.columns]
    for k, (row, placed) in enumerate(placed_rows):
        if k in body.notes:
            continue
        for cell, column in zip(row.cells, placed, strict=True):
            cells[column].append(cell)
    return cells


def _edges(columns: list[list[Box]]) -> list[float] | None:
    """Each column spans its cells; the edge between two columns is midway in the
    gap. None if two columns overlap: no grid."""
    lows = [min(c.x0 for c in column) for column in columns]
    highs = [max(c.x1 for c in column) for column in columns]
    if any(high >= low for high, low in zip(highs, lows[1:], strict=False)):
        return None
    edges = [lows[0] - CELL_PAD_PT, *((h + lo) / 2 for h, lo in zip(highs, lows[1:], strict=False))]
    edges.append(highs[-1] + CELL_PAD_PT)
    return edges


def _grid_rows(body: _Body, placed_rows: list[Placed], edges: list[float]) -> list[TableRow]:
    """A cell box for every column of every row; a note's row has only its
    column's cell, widened to the note's end."""
    width = len(edges) - 1
    lines = [body.header.line, *(row.line for row, _ in placed_rows)]
    table_rows = [
        TableRow(cells=[_cell_box(edges[i], edges[i + 1], line) for i in range(width)])
        for line in lines
    ]
    for k in body.notes:
        (row, (column,)) = placed_rows[k]
        right = max(edges[column + 1], row.cells[0].x1 + CELL_PAD_PT)
        table_rows[k + 1] = TableRow(
            cells=[_cell_box(edges[column], right, row.line) if i == column else None
                   for i in range(width)]
        )  # fmt: skip
    return table_rows


def _note_column(row: _Row, above: _Row, columns: list[Box]) -> int | None:
    """The column a note under a table row starts in: one run of text in smaller
    type than the row ``above`` it, running on over the next columns ("(Runtime: 142
    min); Holiday Season Premium" under a film's title). None if ``row`` is no note."""
    if len(row.cells) != 1 or row.line.size >= NOTE_SIZE_RATIO * above.line.size:
        return None
    start = row.cells[0]
    return _column_of(Box(start.x0, start.y0, start.x0 + PROBE_WIDTH_PT, start.y1), columns)


def _one_full_row(header: _Row, body: list[Placed]) -> bool:
    """A summary table of one row ("Start Date  End Date  # Shows  Gross Amount"
    over its values): enough named columns, every one filled, under a header."""
    if len(body) != 1 or len(header.cells) < MIN_COLUMNS_OF_ONE_ROW:
        return False
    _row, placed = body[0]
    return sorted(placed) == list(range(len(header.cells))) and _heads_columns(header, body)


def _cell_box(left: float, right: float, line: Line) -> Box:
    """The cell between two column edges, as tall as its row's text."""
    return Box(left, line.box.y0 - CELL_PAD_PT, right, line.box.y1 + CELL_PAD_PT)
