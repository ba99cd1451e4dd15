"""Ruled tables from a page's vector rules, without reading any text.

PyMuPDF's ``find_tables`` (a port of pdfplumber) first turns every character
of the page into a Python dict, which costs most of a table page's conversion
time. Ruled tables need only the rules, so this module follows pdfplumber's
lines strategy on them alone: snap and join the horizontal and vertical rules,
intersect them, take the smallest closed cell at each intersection, and group
cells that share corners into tables. Cell text is read later from each cell's
box.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pymupdf

from documents.converters.pdf.geometry import Box
from documents.converters.pdf.thresholds import (
    MIN_GRID,
    MIN_RULE_PT,
    RULE_TOLERANCE_PT,
    STRAIGHT_PT,
    THIN_RULE_PT,
)

Point = tuple[float, float]
# intersection point -> (ids of the vertical rules, ids of the horizontal rules) through it
Crossings = dict[Point, tuple[set[int], set[int]]]


@dataclass(frozen=True)
class _Rule:
    """A horizontal (``at`` = y, ``start``/``end`` = x) or vertical rule."""

    at: float
    start: float
    end: float


@dataclass(frozen=True)
class TableRow:
    """The cell boxes of one row."""

    cells: list[Box | None]  # one per column; None where a cell spans from the left


@dataclass(frozen=True)
class RuledTable:
    """A table's box and its rows of cell boxes (the borderless tables' too)."""

    bbox: Box
    rows: list[TableRow]

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def col_count(self) -> int:
        return len(self.rows[0].cells) if self.rows else 0


def page_rules(page: pymupdf.Page) -> tuple[list[_Rule], list[_Rule]]:
    """Horizontal and vertical rules: lines, thin rectangles, the sides of other rectangles."""
    horizontal: list[_Rule] = []
    vertical: list[_Rule] = []
    for drawing in page.get_cdrawings():
        for item in drawing["items"]:
            if item[0] == "l":
                _line_rules(item[1], item[2], horizontal, vertical)
            elif item[0] == "re":
                _rect_rules(Box.of(item[1]), horizontal, vertical)
    return horizontal, vertical


def _line_rules(
    start: tuple[float, float],
    end: tuple[float, float],
    horizontal: list[_Rule],
    vertical: list[_Rule],
) -> None:
    """A drawn line is a rule when it runs straight across or down the page."""
    (x0, y0), (x1, y1) = start, end
    if abs(y1 - y0) < STRAIGHT_PT:
        horizontal.append(_Rule((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
    elif abs(x1 - x0) < STRAIGHT_PT:
        vertical.append(_Rule((x0 + x1) / 2, min(y0, y1), max(y0, y1)))


def _rect_rules(rect: Box, horizontal: list[_Rule], vertical: list[_Rule]) -> None:
    """A thin rectangle is one rule; any other (an outline, a filled cell) four."""
    thin_h, thin_v = abs(rect.height) < THIN_RULE_PT, abs(rect.width) < THIN_RULE_PT
    if thin_h and not thin_v:
        horizontal.append(_Rule(rect.centre_y, rect.x0, rect.x1))
    elif thin_v and not thin_h:
        vertical.append(_Rule(rect.centre_x, rect.y0, rect.y1))
    elif not (thin_h or thin_v):
        horizontal += [_Rule(rect.y0, rect.x0, rect.x1), _Rule(rect.y1, rect.x0, rect.x1)]
        vertical += [_Rule(rect.x0, rect.y0, rect.y1), _Rule(rect.x1, rect.y0, rect.y1)]


def could_hold_table(horizontal: list[_Rule], vertical: list[_Rule]) -> bool:
    """A table of two rows and two columns needs rules at three x and three y positions."""
    return _positions(horizontal) > MIN_GRID and _positions(vertical) > MIN_GRID


def _positions(rules: list[_Rule]) -> int:
    """How many distinct positions (within the tolerance) rules long enough stand at."""
    count, last = 0, None
    for at in sorted(r.at for r in rules if r.end - r.start >= MIN_RULE_PT):
        if last is None or at - last > RULE_TOLERANCE_PT:
            count += 1
        last = at
    return count


def _merged(rules: list[_Rule]) -> list[_Rule]:
    """Snap rules within the tolerance to their mean position, then join overlapping ones."""
    clusters: list[list[_Rule]] = []
    for rule in sorted(rules, key=lambda r: r.at):
        if clusters and rule.at - clusters[-1][-1].at <= RULE_TOLERANCE_PT:
            clusters[-1].append(rule)
        else:
            clusters.append([rule])
    return [joined for cluster in clusters for joined in _joined(cluster)]


def _joined(cluster: list[_Rule]) -> list[_Rule]:
    """One cluster's rules at their mean position, overlapping ones joined, short
    ones left out."""
    at = sum(r.at for r in cluster) / len(cluster)
    merged: list[_Rule] = []
    start = end = None
    for rule in sorted(cluster, key=lambda r: r.start):
        if start is not None and end is not None and rule.start <= end + RULE_TOLERANCE_PT:
            end = max(end, rule.end)
            continue
        if start is not None and end is not None and end - start >= MIN_RULE_PT:
            merged.append(_Rule(at, start, end))
        start, end = rule.start, rule.end
    if start is not None and end is not None and end - start >= MIN_RULE_PT:
        merged.append(_Rule(at, start, end))
    return merged


def ruled_tables(page: pymupdf.Page) -> list[RuledTable]:
    """Tables of at least two rows and two columns whose cells are closed by rules."""
    horizontal, vertical = page_rules(page)
    if not could_hold_table(horizontal, vertical):
        return []
    points = _crossings(_merged(horizontal), _merged(vertical))
    return [table for group in _groups(_cells(points)) if (table := _table(group)) is not None]


def _crossings(horizontal: list[_Rule], vertical: list[_Rule]) -> Crossings:
    """Where the rules cross (within the tolerance), and which rules pass there."""
    points: Crossings = {}
    for v_id, v in enumerate(vertical):
        for h_id, h in enumerate(horizontal):
            if (
                h.start - RULE_TOLERANCE_PT <= v.at <= h.end + RULE_TOLERANCE_PT
                and v.start - RULE_TOLERANCE_PT <= h.at <= v.end + RULE_TOLERANCE_PT
            ):
                verticals, horizontals = points.setdefault((v.at, h.at), (set(), set()))
                verticals.add(v_id)
                horizontals.add(h_id)
    return points


def _cells(points: Crossings) -> list[Box]:
    """At each intersection, the smallest rectangle closed on all four sides (pdfplumber)."""
    by_x: dict[float, list[float]] = defaultdict(list)
    by_y: dict[float, list[float]] = defaultdict(list)
    for x, y in points:
        by_x[x].append(y)
        by_y[y].append(x)
    for column in by_x.values():
        column.sort()
    for row in by_y.values():
        row.sort()
    cells = (_closed_cell(points, x, y, by_x[x], by_y[y]) for x, y in sorted(points, key=_by_row))
    return [cell for cell in cells if cell is not None]


def _by_row(point: Point) -> tuple[float, float]:
    return point[1], point[0]


def _closed_cell(
    points: Crossings, x: float, y: float, column: list[float], row: list[float]
) -> Box | None:
    """The first rectangle from the corner ``(x, y)`` whose four sides are rules:
    down its ``column`` of crossings and right along its ``row``."""

    def joined_vertically(x: float, y0: float, y1: float) -> bool:
        return bool(points[(x, y0)][0] & points[(x, y1)][0])

    def joined_horizontally(y: float, x0: float, x1: float) -> bool:
        return bool(points[(x0, y)][1] & points[(x1, y)][1])

    below = [y2 for y2 in column if y2 > y and joined_vertically(x, y, y2)]
    right = [x2 for x2 in row if x2 > x and joined_horizontally(y, x, x2)]
    return next(
        (
            Box(x, y, x2, y2)
            for y2 in below
            for x2 in right
            if (x2, y2) in points
            and joined_vertically(x2, y, y2)
            and joined_horizontally(y2, x, x2)
        ),
        None,
    )


def _groups(cells: list[Box]) -> list[list[Box]]:
    """Cells sharing a corner belong to one table."""
    parent = list(range(len(cells)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[Point, int] = {}
    for i, cell in enumerate(cells):
        for corner in _corners(cell):
            if corner in owner:
                parent[root(i)] = root(owner[corner])
            else:
                owner[corner] = i
    groups: dict[int, list[Box]] = defaultdict(list)
    for i, cell in enumerate(cells):
        groups[root(i)].append(cell)
    return sorted(groups.values(), key=lambda g: (min(c.y0 for c in g), min(c.x0 for c in g)))


def _corners(cell: Box) -> tuple[Point, Point, Point, Point]:
    return (cell.x0, cell.y0), (cell.x1, cell.y0), (cell.x0, cell.y1), (cell.x1, cell.y1)


def _table(cells: list[Box]) -> RuledTable | None:
    """One group's cells as rows and columns; None if they are no grid."""
    if _nested(cells):
        return None
    columns = sorted({c.x0 for c in cells})
    tops = sorted({c.y0 for c in cells})
    if len(columns) < MIN_GRID or len(tops) < MIN_GRID:
        return None
    at = {(c.x0, c.y0): c for c in cells}
    rows = [TableRow([at.get((x, y)) for x in columns]) for y in tops]
    bbox = Box(
        min(c.x0 for c in cells),
        min(c.y0 for c in cells),
        max(c.x1 for c in cells),
        max(c.y1 for c in cells),
    )
    return RuledTable(bbox, rows)


def _nested(cells: list[Box]) -> bool:
    """Whether two cells overlap: a frame drawn around rules of its own (a totals
    block whose header rule and column rule sit inside the frame). Each cell's
    text would be read twice, the frame's and the inner cell's; such a group is
    no grid, and its text is left to the page's layout (and to the borderless
    tables, which find its columns by their alignment)."""
    ordered = sorted(cells, key=lambda c: c.y0)
    for i, cell in enumerate(ordered):
        for other in ordered[i + 1 :]:
            if other.y0 >= cell.y1 - RULE_TOLERANCE_PT:
                break  # starts below this cell: so do the rest
            across = min(cell.x1, other.x1) - max(cell.x0, other.x0)
            if across > RULE_TOLERANCE_PT and min(cell.y1, other.y1) - other.y0 > RULE_TOLERANCE_PT:
                return True
    return False
