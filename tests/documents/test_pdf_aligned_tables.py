"""Borderless tables: rows of cells aligned in columns, on real corpus PDFs."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from documents.converters.base import Conversion
from documents.converters.pdf import PdfConverter
from tests.support.corpus import CORPUS

SPARSE = "markitdown/test_files/SPARSE-2024-INV-1234_borderless_table.pdf"


def _convert(name: str) -> Conversion:
    return PdfConverter().convert((CORPUS / name).read_bytes())


def _rows(markdown: str) -> list[list[str]]:
    """Every table row's cells, the delimiter rows left out."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith("|") and not re.fullmatch(r"\|( *-{3,} *\|)+", line)
    ]


def _expected_rows(path: Path, first: str, count: int) -> list[list[str]]:
    rows = _rows(path.read_text())
    start = next(i for i, row in enumerate(rows) if row[0] == first)
    return rows[start : start + count]


def test_a_sparse_borderless_table_keeps_every_cell_in_its_column() -> None:
    """The grid of markitdown's expected output, empty cells included, and its
    bold header row is the table's header, not a heading."""
    conversion = _convert(SPARSE)
    expected = _expected_rows(
        CORPUS / "markitdown/test_files/expected_outputs/SPARSE-2024-INV-1234_borderless_table.md",
        "Product Code",
        9,
    )
    assert _rows(conversion.markdown)[:9] == expected
    assert "## Product Code" not in conversion.markdown
    assert conversion.metadata["tables"] == 2  # and the ruled table further down


def test_centred_columns_are_matched_under_their_header() -> None:
    """PyMuPDF's borderless example: 4 columns x 5 rows (its test adds the rules)."""
    rows = _rows(_convert("pymupdf/small-table.pdf").markdown)
    assert rows == [
        ["Boiling Points °C", "min", "max", "avg"],
        ["Noble gases", "-269", "-62", "-170.5"],
        ["Nonmetals", "-253", "4827", "414.1"],
        ["Metalloids", "335", "3900", "741.5"],
        ["Metals", "357", ">5000", "2755.9"],
    ]


def test_a_borderless_table_in_a_two_column_paper_is_found() -> None:
    rows = _rows(_convert("py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf").markdown)
    assert rows[0] == [
        "Country",
        "Population (millions)",
        "Area (km^2^)",  # the 2 is set raised: a superscript
        "Capital",
        "Official Language",
    ]
    assert ["Belgium", "11.5", "30,689", "Brussels", "Dutch, French, German"] in rows


@pytest.mark.parametrize(
    "name",
    [
        "markitdown/test_files/test.pdf",  # two-column paper
        "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
        "docling/pdf/code_and_formula.pdf",
        "docling/pdf/right_to_left_01.pdf",
        "markitdown/test_files/RECEIPT-2024-TXN-98765_retail_purchase.pdf",
    ],
)
def test_prose_lists_and_columns_of_text_are_not_tables(name: str) -> None:
    conversion = _convert(name)
    assert conversion.metadata["tables"] == 0
    assert not _rows(conversion.markdown)


def test_every_cell_box_holds_its_cell_text() -> None:
    """Each cell's recorded box, read back by PyMuPDF, gives the cell's words."""
    conversion = _convert(SPARSE)
    markdown = conversion.markdown
    checked = 0
    with pymupdf.open(CORPUS / SPARSE) as document:
        for span in conversion.spans:
            text = markdown[span.char_start : span.char_end]
            line_start = markdown.rfind("\n", 0, span.char_start) + 1
            if not markdown.startswith("|", line_start):
                continue
            page = document[span.page_number - 1]
            inside = page.get_text("words", clip=pymupdf.Rect(span.x0, span.y0, span.x1, span.y1))
            assert text.split() == [w[4] for w in inside], (text, inside)
            checked += 1
    assert checked >= 60


def test_a_table_that_starts_with_data_gets_an_empty_header() -> None:
    """A form or a table of contents has no row of column names: its first row
    stays data under an empty header, and no leftover row becomes a heading."""
    repair = _convert("markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf").markdown
    rows = _rows(repair)
    assert ["Insured name", "Bruce Wayne", "Year", "2025"] in rows
    assert ["Claim #", "999", "Make", "Batman"] in rows  # a short value in a wide column
    assert rows[rows.index(["Insured name", "Bruce Wayne", "Year", "2025"]) - 1] == [""] * 4
    assert not re.search(r"^#+ Insured name", repair, re.M)
    contents = _rows(
        _convert("py-pdf-sample-files/006-pdflatex-outline/pdflatex-outline.pdf").markdown
    )
    assert contents[0] == ["", "", ""] and contents[1] == ["1", "Foo", "2"]


def _without_empty_columns(rows: list[list[str]]) -> list[list[str]]:
    keep = [k for k in range(len(rows[0])) if any(row[k] for row in rows)]
    return [[row[k] for k in keep] for row in rows]


def test_row_labels_left_of_the_column_names_are_the_first_column() -> None:
    """A header naming only the value columns (Hours, Rate, Cost) over rows that
    start with a label: the labels are the table's first column, a label alone on
    its row ("Supplies") stays a row, as in markitdown's expected output."""
    name = "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf"
    rows = _rows(_convert(name).markdown)
    start = rows.index(["", "Hours", "Rate", "Cost"])
    expected = _without_empty_columns(
        _expected_rows(
            CORPUS / "markitdown/test_files/expected_outputs/REPAIR-2022-INV-001_multipage.md",
            "Parts",
            4,
        )
    )
    assert rows[start + 1 : start + 5] == expected
    assert rows[start + 5 : start + 8] == [
        ["Supplies", "", "", ""],
        ["Paint Supplies", "", "", "60"],
        ["Body Supplies", "", "", "30"],
    ]
    assert rows[start + 10] == ["Sales Tax", "", "10.20%", "278.46"]


def test_a_lone_line_under_a_labelled_table_is_not_a_row() -> None:
    """A short line starting where the labels start, right under the table, is
    text after it: a label needs values below it to be a row."""
    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((250, 100), "Hours", fontsize=10)
    page.insert_text((320, 100), "Rate", fontsize=10)
    page.insert_text((390, 100), "Cost", fontsize=10)
    for i, (label, hours, rate, cost) in enumerate(
        [("Body", "2", "150", "300"), ("Paint", "1.5", "150", "225"), ("Parts", "4", "10", "40")]
    ):
        y = 114 + 14 * i
        page.insert_text((72, y), label, fontsize=10)
        for x, value in ((250, hours), (320, rate), (390, cost)):
            page.insert_text((x, y), value, fontsize=10)
    page.insert_text((72, 156), "Thank you", fontsize=10)
    markdown = PdfConverter().convert(document.tobytes()).markdown
    rows = _rows(markdown)
    assert rows[0] == ["", "Hours", "Rate", "Cost"]
    assert rows[1:] == [
        ["Body", "2", "150", "300"],
        ["Paint", "1.5", "150", "225"],
        ["Parts", "4", "10", "40"],
    ]
    assert "\nThank you" in markdown


def test_a_summary_table_of_one_full_row_is_a_table() -> None:
    """markitdown's booking order: "Booking Summary" and "Account Representatives"
    are a header over one row of values, as its expected output has them; a table
    whose rows are overprinted by other text ("Show Details") stays text."""
    markdown = _convert("markitdown/test_files/movie-theater-booking-2024.pdf").markdown
    rows = _rows(markdown)
    assert ["Start Date", "End Date", "# Shows", "Gross Amount", "Net Amount"] in rows
    assert ["12/20/24", "12/31/24", "48", "$12,500.00", "$11,250.00"] in rows
    representatives = rows.index(
        ["Representative", "Territory", "Region", "Start Date / End Date", "Commission %"]
    )
    assert rows[representatives + 1] == [
        "Sarah Johnson", "NYC Metro", "NORTHEAST", "12/20/24 - 12/31/24", "100%"
    ]  # fmt: skip
    assert not any("This book" in cell for row in rows for cell in row)
    assert "This booking order is subject to cinema availability and standard terms." in markdown


def test_notes_in_smaller_type_under_rows_stay_in_the_table() -> None:
    """The booking order's show schedule sets each film's runtime and offer in
    6 pt under its title, running on over the next columns: every film is a row,
    each note a row of its own in the title's column, its box around its words."""
    name = "markitdown/test_files/movie-theater-booking-2024.pdf"
    conversion = _convert(name)
    rows = _rows(conversion.markdown)
    start = rows.index(["Ln", "Screen", "Start", "End", "Movie Title", "Format", "Showtime",
                        "Days", "Shows", "Rate", "Type", "Total"])  # fmt: skip
    films = [
        ("Holiday Spectacular", "IMAX 3D", "(Runtime: 142 min); Holiday Season Premium"),
        ("Winter Wonderland", "Standard", "(Runtime: 98 min); Matinee Special"),
        ("New Year Mystery", "4DX", "(Runtime: 116 min); Premium Experience"),
    ]
    for k, (title, screen_format, note) in enumerate(films):
        film, under = rows[start + 1 + 2 * k], rows[start + 2 + 2 * k]
        assert film[0] == str(k + 1) and film[4:6] == [title, screen_format]
        assert under == ["", "", "", "", note] + [""] * 7
    markdown = conversion.markdown
    with pymupdf.open(CORPUS / name) as document:
        for _title, _format, note in films:
            span = next(s for s in conversion.spans if markdown[s.char_start : s.char_end] == note)
            clip = pymupdf.Rect(span.x0, span.y0, span.x1, span.y1)
            assert [w[4] for w in document[0].get_text("words", clip=clip)] == note.split()


def test_a_caption_under_a_table_in_smaller_type_is_text_after_it() -> None:
    document = pymupdf.open()
    page = document.new_page()
    for x, name in ((72, "Item"), (200, "Quantity"), (300, "Price")):
        page.insert_text((x, 100), name, fontsize=10)
    for i, values in enumerate([("Bolts", "40", "$4.00"), ("Nuts", "40", "$2.00")]):
        for x, value in zip((72, 200, 300), values, strict=True):
            page.insert_text((x, 114 + 14 * i), value, fontsize=10)
    page.insert_text((72, 140), "Source: the warehouse ledger of March and April", fontsize=7)
    markdown = PdfConverter().convert(document.tobytes()).markdown
    assert _rows(markdown) == [
        ["Item", "Quantity", "Price"], ["Bolts", "40", "$4.00"], ["Nuts", "40", "$2.00"]
    ]  # fmt: skip
    assert "\nSource: the warehouse ledger of March and April" in markdown


def _table_then(lines: list[tuple[str, float]], header_size: float = 10) -> str:
    """A three-column table (header in ``header_size``, 10 pt rows), then ``lines``
    (text, size) one under the other at the left edge, converted."""
    document = pymupdf.open()
    page = document.new_page()
    for x, name in ((72, "Item"), (200, "Quantity"), (300, "Price")):
        page.insert_text((x, 100), name, fontsize=header_size)
    for i, values in enumerate([("Bolts", "40", "$4.00"), ("Nuts", "40", "$2.00")]):
        for x, value in zip((72, 200, 300), values, strict=True):
            page.insert_text((x, 116 + 14 * i), value, fontsize=10)
    y = 140.0
    for text, size in lines:
        page.insert_text((72, y), text, fontsize=size)
        y += size + 3
    return PdfConverter().convert(document.tobytes()).markdown


def test_lines_under_a_table_stay_text_after_it() -> None:
    """Under a header set larger than its rows, prose in the rows' type is no note;
    two caption lines in small type are text after the table, as one caption is."""
    table = [["Item", "Quantity", "Price"], ["Bolts", "40", "$4.00"], ["Nuts", "40", "$2.00"]]
    prose = _table_then(
        [("Prices were checked on the first of May", 10),
         ("and will be reviewed again in the autumn.", 10)],
        header_size=12,
    )  # fmt: skip
    assert _rows(prose) == table
    assert "Prices were checked on the first of May and will be reviewed" in prose
    captions = _table_then(
        [("Source: the warehouse ledger of March.", 7), ("Note: prices exclude VAT.", 7)]
    )
    assert _rows(captions) == table
    assert "Source: the warehouse ledger of March." in captions
    assert "Note: prices exclude VAT." in captions
