"""Borderless tables: rows of cells aligned in columns, without any rules.

A table drawn without rules has nothing for ``_pdf_tables`` to follow. PyMuPDF
gives each cell its own line, and ``extract_page`` joins the lines of one row
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
The cell boxes then go through the same path as ruled tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from documents.converters._pdf_layout import Block, Line, union
from documents.converters._pdf_tables import RuledTable, TableRow

Box = tuple[float, float, float, float]

MIN_COLUMNS = 3
MIN_BODY_ROWS = 2
# a table of one row needs this many named columns, each filled, under a header row
MIN_COLUMNS_OF_ONE_ROW = 4
OVERPRINT = 2.0  # points a line may reach into the row above before it is drawn over it
MAX_CELL_CHARS = 60  # a longer run of text is prose, not a cell
CELL_GAP = 0.6  # parts closer than this many font sizes are one cell
COLUMN_TOLERANCE = 4.0  # points a cell may start left of its column's start
PITCH_SLACK = 1.6  # a row farther below the previous than this many pitches ends the table
_STUB = -1  # the column of a row label that starts left of every header cell


@dataclass(frozen=True)
class _Cell:
    box: Box

    @property
    def x0(self) -> float:
        return self.box[0]

    @property
    def x1(self) -> float:
        return self.box[2]


@dataclass(frozen=True)
class _Row:
    line: Line
    cells: list[_Cell]

    @property
    def centre_y(self) -> float:
        return (self.line.box[1] + self.line.box[3]) / 2


def aligned_tables(blocks: list[Block]) -> list[RuledTable]:
    """The borderless tables among ``blocks`` (the text blocks of one page)."""
    lines = [line for block in blocks if block.table is None for line in block.lines]
    if not any(len(line.parts) >= MIN_COLUMNS for line in lines):
        return []  # no line could head a table: most pages of prose
    rows = sorted(
        (_row(line) for line in lines),
        key=lambda r: r.centre_y,
    )
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
    """The line's cells: its parts, joined where the gap between them is a space."""
    cells: list[Box] = []
    for start, end, box in sorted(line.parts, key=lambda p: p[2][0]):
        if not line.text[start:end].strip():
            continue
        if cells and box[0] - cells[-1][2] < CELL_GAP * line.size:
            cells[-1] = union([cells[-1], box])
        else:
            cells.append(tuple(box))
    return _Row(line, [_Cell(c) for c in cells])


def _short(row: _Row) -> bool:
    """No cell of the row holds more than a cell's worth of text."""
    return len(row.line.text) <= MAX_CELL_CHARS * max(1, len(row.cells))


def _column_of(cell: _Cell, columns: list[_Cell]) -> int | None:
    """The column of ``cell``: the one header cell it lies under (left, centred or
    right aligned); failing that, the one whose start it follows without reaching
    the next header cell (a short value right-aligned in a wide column). None if
    it lies under two, or before the first."""
    under = [
        index
        for index, column in enumerate(columns)
        if cell.x0 < column.x1 + COLUMN_TOLERANCE and cell.x1 > column.x0 - COLUMN_TOLERANCE
    ]
    if under:
        return under[0] if len(under) == 1 else None
    after = [i for i, column in enumerate(columns) if cell.x0 >= column.x0 - COLUMN_TOLERANCE]
    return after[-1] if after else None


_NUMBER = re.compile(r"[\d\s$€£%+\-−.,:/()]*\d[\d\s$€£%+\-−.,:/()]*")


def _numeric(line: Line, cell: _Cell) -> bool:
    text = "".join(
        line.text[start:end] for start, end, box in line.parts if cell.x0 <= box[0] < cell.x1
    )
    return bool(_NUMBER.fullmatch(text.strip()))


def _heads_columns(header: _Row, body: list[tuple[_Row, list[int]]]) -> bool:
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
    columns = header.cells
    left, right = header.line.box[0], header.line.box[2]
    body: list[tuple[_Row, list[int]]] = []
    taken = {first}
    pitch: float | None = None
    previous = header.centre_y
    labels: float | None = None  # where the row labels start, once a row has one
    overlapped, bottom = False, header.line.box[3]
    notes: set[int] = set()  # body rows that are notes under the row above
    last_row: _Row | None = None  # the last body row that is no note
    for index in range(first + 1, len(rows)):
        row = rows[index]
        if index in consumed:
            continue
        if row.line.box[2] < left - COLUMN_TOLERANCE and not (
            labels is not None and abs(row.line.box[0] - labels) <= COLUMN_TOLERANCE
        ):
            continue  # another text column, left of the table (not a label of its own)
        if row.line.box[0] > right + COLUMN_TOLERANCE:
            continue  # another text column, right of the table
        gap = row.centre_y - previous
        limit = 3 * header.line.height if pitch is None else PITCH_SLACK * pitch
        # text drawn over the row above: no clean grid (its words would cross cells)
        overlapped = row.line.box[1] < bottom - OVERPRINT
        if overlapped or gap <= COLUMN_TOLERANCE or gap > limit or not _short(row):
            break
        placed = [_column_of(cell, columns) for cell in row.cells]
        if placed and placed[0] is None and row.cells[0].x1 < columns[0].x0 - COLUMN_TOLERANCE:
            placed[0] = _STUB  # a row label, left of every named column
            labels = row.cells[0].x0 if labels is None else min(labels, row.cells[0].x0)
        note = _note_column(row, last_row, columns) if last_row is not None else None
        if note is not None:
            notes.add(len(body))
            placed = [note]
        elif None in placed or len(set(placed)) != len(placed):
            break
        else:
            pitch = gap if pitch is None else min(pitch, gap)
            last_row = row
        body.append((row, placed))
        taken.add(index)
        previous, bottom = row.centre_y, row.line.box[3]
    while body and body[-1][1] == [_STUB]:  # a lone label under the table is text after it
        body.pop()
        taken.remove(max(taken))
    # notes after the last row are the table's only where rows before have notes too
    # (each film's runtime under its title); else they are text after it (a caption)
    rows_end = max((k for k in range(len(body)) if k not in notes), default=-1) + 1
    if notes and min(notes) >= rows_end:
        for _ in range(len(body) - rows_end):
            body.pop()
            taken.remove(max(taken))
        notes.clear()
    rows_proper = [entry for k, entry in enumerate(body) if k not in notes]
    if len(rows_proper) < MIN_BODY_ROWS and (overlapped or not _one_full_row(header, rows_proper)):
        return None, set()
    # row labels, if any, are the first column: the header has no cell over them
    stub = any(_STUB in placed for _, placed in body)
    body = [(row, [column + stub for column in placed]) for row, placed in body]
    # each column spans its cells; the edge between two columns is midway in the gap
    cells: list[list[_Cell]] = ([[]] if stub else []) + [[c] for c in columns]
    for k, (row, placed) in enumerate(body):
        for cell, column in zip(row.cells, placed, strict=True):
            if k not in notes:  # a note runs on over the next columns: no column's width
                cells[column].append(cell)
    lows = [min(c.x0 for c in column) for column in cells]
    highs = [max(c.x1 for c in column) for column in cells]
    if any(high >= low for high, low in zip(highs, lows[1:], strict=False)):
        return None, set()  # columns that overlap are no grid
    edges = [lows[0] - 1, *((h + lo) / 2 for h, lo in zip(highs, lows[1:], strict=False))]
    edges.append(highs[-1] + 1)
    every = [header.line.box] + [r.line.box for r, _ in body]
    table_rows = [
        TableRow(cells=[_cell_box(edges[i], edges[i + 1], r.line) for i in range(len(cells))])
        for r in [header, *(r for r, _ in body)]
    ]
    for k in notes:  # its column's cell, widened to the note's end; the others empty
        (row, (column,)) = body[k]
        right = max(edges[column + 1], row.cells[0].x1 + 1)
        table_rows[k + 1] = TableRow(
            cells=[_cell_box(edges[column], right, row.line) if i == column else None
                   for i in range(len(cells))]
        )  # fmt: skip
    body = rows_proper
    if not _heads_columns(header, body):  # data from the first row on: an empty header
        table_rows.insert(0, TableRow(cells=[None] * len(cells)))
    top, bottom = union(every)[1] - 1, union(every)[3] + 1
    return RuledTable(bbox=(edges[0], top, edges[-1], bottom), rows=table_rows), taken


def _note_column(row: _Row, above: _Row, columns: list[_Cell]) -> int | None:
    """The column a note under a table row starts in: one run of text in smaller
    type than the row ``above`` it, running on over the next columns ("(Runtime: 142
    min); Holiday Season Premium" under a film's title). None if ``row`` is no note."""
    if len(row.cells) != 1 or row.line.size >= 0.9 * above.line.size:
        return None
    start = row.cells[0]
    return _column_of(_Cell((start.x0, start.box[1], start.x0 + 1, start.box[3])), columns)


def _one_full_row(header: _Row, body: list[tuple[_Row, list[int]]]) -> bool:
    """A summary table of one row ("Start Date  End Date  # Shows  Gross Amount"
    over its values): enough named columns, every one filled, under a header."""
    if len(body) != 1 or len(header.cells) < MIN_COLUMNS_OF_ONE_ROW:
        return False
    row, placed = body[0]
    return sorted(placed) == list(range(len(header.cells))) and _heads_columns(header, body)


def _cell_box(left: float, right: float, line: Line) -> Box:
    """The cell between two column edges, as tall as its row's text."""
    return (left, line.box[1] - 1, right, line.box[3] + 1)
