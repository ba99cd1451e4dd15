"""Ruled tables found from a page's rules alone, checked against PyMuPDF's own finder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pymupdf
import pytest

from documents.converters.pdf import PdfConverter
from documents.converters.pdf.ruled import RuledTable, ruled_tables
from tests.support.corpus import CORPUS

if TYPE_CHECKING:
    from pymupdf.table import Table as TableFinderTable


def _grid_pdf(*, columns: list[float], rows: list[float], merged_top: bool = False) -> bytes:
    """A page with a grid drawn by lines and a word in every cell."""
    document = pymupdf.open()
    page = document.new_page()
    left, right, top, bottom = columns[0], columns[-1], rows[0], rows[-1]
    for y in rows:
        page.draw_line((left, y), (right, y))
    for i, x in enumerate(columns):
        inner = 0 < i < len(columns) - 1
        start = rows[1] if merged_top and inner else top  # the top row spans every column
        page.draw_line((x, start), (x, bottom))
    for r, y in enumerate(rows[1:]):
        for c, x in enumerate(columns[:-1]):
            if merged_top and r == 0 and c > 0:
                continue
            page.insert_text((x + 4, y - 6), f"r{r}c{c}", fontsize=9)
    return document.tobytes()


def test_a_drawn_grid_is_one_table_with_its_cell_boxes() -> None:
    data = _grid_pdf(columns=[72, 200, 330, 460], rows=[100, 130, 160])
    (table,) = ruled_tables(pymupdf.open(stream=data)[0])
    assert (table.row_count, table.col_count) == (2, 3)
    cell = table.rows[1].cells[2]
    assert cell is not None
    assert cell.as_tuple() == pytest.approx((330, 130, 460, 160), abs=0.5)
    markdown = PdfConverter().convert(data).markdown
    assert "| r0c0 | r0c1 | r0c2 |" in markdown
    assert "| r1c0 | r1c1 | r1c2 |" in markdown


def test_a_cell_spanning_the_row_leaves_the_covered_columns_empty() -> None:
    data = _grid_pdf(columns=[72, 200, 330], rows=[100, 130, 160], merged_top=True)
    (table,) = ruled_tables(pymupdf.open(stream=data)[0])
    spanning = table.rows[0].cells[0]
    assert spanning is not None
    assert spanning.as_tuple() == pytest.approx((72, 100, 330, 130), abs=0.5)
    assert table.rows[0].cells[1] is None
    assert "| r0c0 |  |" in PdfConverter().convert(data).markdown


def test_a_framed_paragraph_or_an_underline_is_not_a_table() -> None:
    document = pymupdf.open()
    page = document.new_page()
    page.draw_rect((72, 100, 500, 200))
    page.insert_text((80, 120), "A framed listing, one column only.")
    page.draw_line((72, 300), (500, 300))
    page.draw_line((72, 303.5), (500, 303.5))  # a double underline snaps into one rule
    assert ruled_tables(pymupdf.open(stream=document.tobytes())[0]) == []


def _near(a: tuple[float, ...] | None, b: tuple[float, ...] | None) -> bool:
    """Boxes equal within 1.5 pt: rules are snapped to the mean of strokes a line width apart."""
    if a is None or b is None:
        return a is b
    return all(abs(p - q) <= 1.5 for p, q in zip(a, b, strict=True))


def _same_table(ours: RuledTable, theirs: TableFinderTable) -> bool:
    """Equal cell for cell, except that PyMuPDF may close one more row at the bottom."""
    return (
        _near(ours.bbox.as_tuple()[:3], tuple(theirs.bbox)[:3])
        and ours.col_count == theirs.col_count
        and ours.row_count in (theirs.row_count, theirs.row_count - 1)
        and all(
            _near(None if a is None else a.as_tuple(), b)
            for mine, other in zip(ours.rows, theirs.rows, strict=False)
            for a, b in zip(mine.cells, other.cells, strict=True)
        )
    )


def test_corpus_tables_match_pymupdfs_finder() -> None:
    """Every table we find is one PyMuPDF's ``find_tables`` finds, cell for cell.

    PyMuPDF closes a last row that has no rule under it; we leave that row as
    text, so a table it finds may be missing here, but never one it does not find.
    Nor do we keep a frame drawn around rules of its own (REPAIR's totals, twice):
    its cells overlap (see the test below).
    """
    matched = 0
    for path in sorted(CORPUS.rglob("*.pdf")):
        if "hostile" in path.parts:
            continue
        document = pymupdf.open(path)
        if document.needs_pass:
            continue
        for page in document.pages():
            ours = ruled_tables(page)
            if not ours:
                continue
            theirs = [
                t
                for t in page.find_tables(use_layout=False).tables
                if t.row_count >= 2 and t.col_count >= 2
            ]
            for table in ours:
                assert any(_same_table(table, t) for t in theirs), (
                    f"{path.name} page {page.number + 1}: {table.bbox} differs from PyMuPDF's"
                )
                matched += 1
    assert matched >= 4


def _ruled(page: pymupdf.Page, columns: Sequence[float], rows: Sequence[float]) -> None:
    for x in columns:
        page.draw_line((x, rows[0]), (x, rows[-1]), width=0.5)
    for y in rows:
        page.draw_line((columns[0], y), (columns[-1], y), width=0.5)


def test_text_touching_across_a_cell_border_stays_in_its_own_cell() -> None:
    """Right-aligned figures touching the next cell's text make one word in the
    page's word list; each cell still gets its own characters."""
    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((72, 60), "Figures by quarter, as reported.", fontsize=11)
    columns, rows = [72, 200, 330, 460], [100, 120, 140, 160]
    _ruled(page, columns, rows)
    for r in range(3):
        width = pymupdf.get_text_length(f"{r}23", fontsize=10)
        page.insert_text((columns[1] - width, rows[r] + 14), f"{r}23", fontsize=10)
        page.insert_text((columns[1], rows[r] + 14), f"abc{r}", fontsize=10)
        page.insert_text((columns[2] + 3, rows[r] + 14), "z", fontsize=10)
    markdown = PdfConverter().convert(document.tobytes()).markdown
    assert "| 023 | abc0 | z |" in markdown
    assert "| 223 | abc2 | z |" in markdown


def test_right_to_left_cells_read_as_their_clipped_text() -> None:
    """The word list cuts words where right-to-left and left-to-right text meet;
    such cells keep the text a clip of the cell gives, punctuation in place."""
    cells = [("מחיר: 100₪", "price"), ("(שלום)", "גרסה3 ו-PDF")]
    rows = "".join(
        f'<tr><td style="border:1px solid black;padding:3px" dir="rtl">{a}</td>'
        f'<td style="border:1px solid black;padding:3px" dir="rtl">{b}</td></tr>'
        for a, b in cells
    )
    document = pymupdf.open()
    page = document.new_page()
    page.insert_htmlbox(
        pymupdf.Rect(72, 72, 500, 600),
        f"<p>Intro paragraph.</p><table style='border-collapse:collapse'>{rows}</table>"
        "<p>A paragraph after the table.</p>",
    )
    data = document.tobytes()
    reread = pymupdf.open(stream=data)[0]
    (table,) = ruled_tables(reread)
    boxes = [box for row in table.rows for box in row.cells]
    assert None not in boxes  # no cell spans another
    clipped = [
        " ".join(reread.get_text("text", clip=box.as_tuple()).split())
        for box in boxes
        if box is not None
    ]
    markdown = PdfConverter().convert(data).markdown
    assert f"| {clipped[0]} | {clipped[1]} |" in markdown
    assert f"| {clipped[2]} | {clipped[3]} |" in markdown
    assert any(":" in c and "100" in c for c in clipped)  # the cell's text was read


def test_a_frame_around_rules_of_its_own_is_not_a_table_and_reads_its_text_once() -> None:
    """A totals block framed by a rectangle, with a header rule and a column rule
    inside the frame: the frame's cell and the inner one overlap, so their text
    would be read twice; the block is left to the layout instead."""
    document = pymupdf.open()
    page = document.new_page()
    page.draw_rect((72, 100, 500, 300), width=0.5)
    page.draw_line((250, 130), (500, 130), width=0.5)
    page.draw_line((250, 130), (250, 300), width=0.5)
    page.insert_text((80, 120), "Totals heading", fontsize=10)
    page.insert_text((260, 124), "Amount", fontsize=10)
    page.insert_text((80, 150), "Labour", fontsize=10)
    page.insert_text((260, 150), "4,321", fontsize=10)
    data = document.tobytes()
    assert ruled_tables(pymupdf.open(stream=data)[0]) == []
    markdown = PdfConverter().convert(data).markdown
    for word in ("Totals", "Amount", "Labour", "4,321"):
        assert markdown.count(word) == 1, (word, markdown)


def test_the_repair_estimate_totals_are_read_once_as_their_own_table() -> None:
    """markitdown's REPAIR invoice frames its totals together with their column
    rules: each figure appears once, in its row, as in markitdown's expected output."""
    name = "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf"
    markdown = PdfConverter().convert((CORPUS / name).read_bytes()).markdown
    first_page = markdown[: markdown.index("Bruce Wayne")]
    for figure in ("2,100", "2,730", "278.46", "5,738", "10.20%"):
        assert first_page.count(figure) == 1, figure
    assert "| Body Labor | 2 | 150 | 300 |" in first_page
    assert "| GRAND TOTAL |  |  | 5,738 |" in first_page


def test_a_cell_merged_across_some_columns_fills_each_of_them() -> None:
    """The Google Docs sample: "Europe" spans the four European countries and
    "EUR (€)" three of them; each country's column reads its continent and
    currency, boxed on the merged cell, as a DOCX's merged cells read."""
    name = "py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf"
    conversion = PdfConverter().convert((CORPUS / name).read_bytes())
    markdown = conversion.markdown
    assert "| Continent | Asia | Europe | Europe | Europe | Europe |" in markdown
    assert "| Currency | Rupia | EUR (€) | EUR (€) | EUR (€) | - |" in markdown
    line_start = markdown.index("| Continent")
    boxes = {
        (s.x0, s.y0, s.x1, s.y1)
        for s in conversion.spans
        if line_start <= s.char_start < markdown.index("\n", line_start)
        and markdown[s.char_start : s.char_end] == "Europe"
    }
    assert len(boxes) == 1  # the one merged cell's box, four times
