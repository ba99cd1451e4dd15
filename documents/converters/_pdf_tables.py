"""Ruled tables from a page's vector rules, without reading any text.

PyMuPDF's ``find_tables`` (a port of pdfplumber) first turns every character
of the page into a Python dict, which costs 20-40 ms on a page of text: most
of a table page's conversion time. Ruled tables need only the rules, so this
module follows pdfplumber's lines strategy on them alone: snap and join the
horizontal and vertical rules, intersect them, take the smallest closed cell
at each intersection, and group cells that share corners into tables. Cell
text is read later from each cell's box.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pymupdf

Box = tuple[float, float, float, float]

TOLERANCE = 3.0  # points: rules this close are one rule (pdfplumber's snap/join default)
MIN_RULE = 3.0  # points: shorter strokes are glyph fragments, not rules
_THIN = 2.5  # points: a filled rectangle this thin is drawn as a rule


@dataclass(frozen=True)
class _Rule:
    """A horizontal (``at`` = y, ``start``/``end`` = x) or vertical rule."""

    at: float
    start: float
    end: float


@dataclass(frozen=True)
class TableRow:
    cells: list[Box | None]  # one per column; None where a cell spans from the left


@dataclass(frozen=True)
class RuledTable:
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
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y1 - y0) < 1:
                    horizontal.append(_Rule((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
                elif abs(x1 - x0) < 1:
                    vertical.append(_Rule((x0 + x1) / 2, min(y0, y1), max(y0, y1)))
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                thin_h, thin_v = abs(y1 - y0) < _THIN, abs(x1 - x0) < _THIN
                if thin_h and not thin_v:
                    horizontal.append(_Rule((y0 + y1) / 2, x0, x1))
                elif thin_v and not thin_h:
                    vertical.append(_Rule((x0 + x1) / 2, y0, y1))
                elif not (thin_h or thin_v):  # outline or filled cell: its four sides
                    horizontal += [_Rule(y0, x0, x1), _Rule(y1, x0, x1)]
                    vertical += [_Rule(x0, y0, y1), _Rule(x1, y0, y1)]
    return horizontal, vertical


def could_hold_table(horizontal: list[_Rule], vertical: list[_Rule]) -> bool:
    """A table of two rows and two columns needs rules at three x and three y positions."""
    return _positions(horizontal) >= 3 and _positions(vertical) >= 3


def _positions(rules: list[_Rule]) -> int:
    count, last = 0, None
    for at in sorted(r.at for r in rules if r.end - r.start >= MIN_RULE):
        if last is None or at - last > TOLERANCE:
            count += 1
        last = at
    return count


def _merged(rules: list[_Rule]) -> list[_Rule]:
    """Snap rules within the tolerance to their mean position, then join overlapping ones."""
    clusters: list[list[_Rule]] = []
    for rule in sorted(rules, key=lambda r: r.at):
        if clusters and rule.at - clusters[-1][-1].at <= TOLERANCE:
            clusters[-1].append(rule)
        else:
            clusters.append([rule])
    merged: list[_Rule] = []
    for cluster in clusters:
        at = sum(r.at for r in cluster) / len(cluster)
        start = end = None
        for rule in sorted(cluster, key=lambda r: r.start):
            if start is not None and rule.start <= end + TOLERANCE:
                end = max(end, rule.end)
                continue
            if start is not None and end - start >= MIN_RULE:
                merged.append(_Rule(at, start, end))
            start, end = rule.start, rule.end
        if start is not None and end - start >= MIN_RULE:
            merged.append(_Rule(at, start, end))
    return merged


def ruled_tables(page: pymupdf.Page) -> list[RuledTable]:
    """Tables of at least two rows and two columns whose cells are closed by rules."""
    horizontal, vertical = page_rules(page)
    if not could_hold_table(horizontal, vertical):
        return []
    horizontal, vertical = _merged(horizontal), _merged(vertical)
    # intersection point -> (ids of the vertical rules, ids of the horizontal rules) through it
    points: dict[tuple[float, float], tuple[set[int], set[int]]] = {}
    for v_id, v in enumerate(vertical):
        for h_id, h in enumerate(horizontal):
            if (
                h.start - TOLERANCE <= v.at <= h.end + TOLERANCE
                and v.start - TOLERANCE <= h.at <= v.end + TOLERANCE
            ):
                verticals, horizontals = points.setdefault((v.at, h.at), (set(), set()))
                verticals.add(v_id)
                horizontals.add(h_id)
    cells = _cells(points)
    return [table for group in _groups(cells) if (table := _table(group)) is not None]


def _cells(points: dict[tuple[float, float], tuple[set[int], set[int]]]) -> list[Box]:
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

    def joined_vertically(x: float, y0: float, y1: float) -> bool:
        return bool(points[(x, y0)][0] & points[(x, y1)][0])

    def joined_horizontally(y: float, x0: float, x1: float) -> bool:
        return bool(points[(x0, y)][1] & points[(x1, y)][1])

    cells: list[Box] = []
    for x, y in sorted(points, key=lambda p: (p[1], p[0])):
        below = [y2 for y2 in by_x[x] if y2 > y and joined_vertically(x, y, y2)]
        right = [x2 for x2 in by_y[y] if x2 > x and joined_horizontally(y, x, x2)]
        cell = next(
            (
                (x, y, x2, y2)
                for y2 in below
                for x2 in right
                if (x2, y2) in points
                and joined_vertically(x2, y, y2)
                and joined_horizontally(y2, x, x2)
            ),
            None,
        )
        if cell is not None:
            cells.append(cell)
    return cells


def _groups(cells: list[Box]) -> list[list[Box]]:
    """Cells sharing a corner belong to one table."""
    parent = list(range(len(cells)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[float, float], int] = {}
    for i, (x0, y0, x1, y1) in enumerate(cells):
        for corner in ((x0, y0), (x1, y0), (x0, y1), (x1, y1)):
            if corner in owner:
                parent[root(i)] = root(owner[corner])
            else:
                owner[corner] = i
    groups: dict[int, list[Box]] = defaultdict(list)
    for i, cell in enumerate(cells):
        groups[root(i)].append(cell)
    return sorted(groups.values(), key=lambda g: (min(c[1] for c in g), min(c[0] for c in g)))


def _table(cells: list[Box]) -> RuledTable | None:
    if _nested(cells):
        return None
    columns = sorted({c[0] for c in cells})
    tops = sorted({c[1] for c in cells})
    if len(columns) < 2 or len(tops) < 2:
        return None
    at = {(c[0], c[1]): c for c in cells}
    rows = [TableRow([at.get((x, y)) for x in columns]) for y in tops]
    bbox = (
        min(c[0] for c in cells),
        min(c[1] for c in cells),
        max(c[2] for c in cells),
        max(c[3] for c in cells),
    )
    return RuledTable(bbox, rows)


def _nested(cells: list[Box]) -> bool:
    """Whether two cells overlap: a frame drawn around rules of its own (a totals
    block whose header rule and column rule sit inside the frame). Each cell's
    text would be read twice, the frame's and the inner cell's; such a group is
    no grid, and its text is left to the page's layout (and to the borderless
    tables, which find its columns by their alignment)."""
    ordered = sorted(cells, key=lambda c: c[1])
    for i, (x0, _top, x1, y1) in enumerate(ordered):
        for other in ordered[i + 1 :]:
            if other[1] >= y1 - TOLERANCE:
                break  # starts below this cell: so do the rest
            across = min(x1, other[2]) - max(x0, other[0])
            if across > TOLERANCE and min(y1, other[3]) - other[1] > TOLERANCE:
                return True
    return False
