"""Borderless label/value forms: each row its own line, each cell its own box.

The forms are generated with PyMuPDF in many layouts and seeds (fonts and sizes,
label column widths, one or two records a page, a block of line items or a
paragraph beside the record, values set a little off the label's baseline), then
converted by the real converter.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field

import pymupdf
import pytest

from documents.converters.base import Conversion
from documents.converters.pdf import PdfConverter
from tests.documents.test_location_boxes import _box_check, _centre
from tests.support.corpus import CORPUS

FIELDS = ("Customer name", "Phone", "Policy number", "VIN", "Total")
ITEMS = ("Parts", "Body labor", "Paint supplies", "Sales tax")
NAMES = ("Dmitri Silva", "Ana Lucia Ferreira", "Kwame Mensah", "Yuki Tanaka", "Olga Berg")
FONTS = ("helv", "tiro", "cour")
PROSE = (
    "The vehicle was inspected on arrival and the damage to the rear bumper "
    "was recorded with photographs. Repairs start once the insurer approves "
    "the estimate, and the customer is called when the car is ready."
)


@dataclass
class _Layout:
    """One generated page: its records (label, value rows) and what stands beside."""

    font: str
    size: float
    value_x: float  # where the value column starts
    records: list[list[tuple[str, str]]]
    beside: list[tuple[str, str]] = field(default_factory=list)  # line items
    beside_row: int = 0  # the record row the items start on
    paragraph: bool = False  # prose beside the record instead
    jitter: float = 0.0  # how far values sit below their labels' baseline
    blockwise: bool = False  # the items drawn after the record, not row by row


def _record(rng: random.Random) -> list[tuple[str, str]]:
    vin = "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(17))
    return [
        ("Customer name", rng.choice(NAMES) + f" {rng.randint(10, 99)}"),
        ("Phone", f"+1 555 {rng.randint(1000, 9999)}"),
        ("Policy number", f"POL {rng.randint(10, 99)}-{rng.randint(1000, 9999)}"),
        ("VIN", vin),
        ("Total", f"{rng.randint(1, 9)},{rng.randint(100, 999)}.{rng.randint(10, 99)}"),
    ]


def _layout(seed: int, *, records: int, beside: str = "", beside_row: int = 3) -> _Layout:
    rng = random.Random(seed)
    font, size = rng.choice(FONTS), rng.choice((9.0, 10.0, 11.0, 12.0))
    layout = _Layout(
        font=font,
        size=size,
        value_x=72 + rng.uniform(8.5, 13.0) * size,  # past the longest label, wide or narrow
        records=[_record(rng) for _ in range(records)],
        beside_row=beside_row,
        paragraph=beside == "paragraph",
        jitter=rng.choice((0.0, 0.6, 1.2)),
    )
    if beside == "items":
        layout.beside = [
            (item, f"{rng.randint(1, 9)},{rng.randint(100, 999)}.00")
            for item in ITEMS[: rng.randint(2, 4)]
        ]
    return layout


def _pdf(layout: _Layout) -> bytes:
    """The layout drawn row by row, as a report writer draws it: a heading, then each
    row's label and value (and what stands beside on that row) left to right."""
    document = pymupdf.open()
    page = document.new_page()
    pitch = layout.size * 1.45
    y = 72.0
    later: list[tuple[float, float, str]] = []  # items drawn after the record
    for record in layout.records:
        page.insert_text((72, y), "Vehicle service record", fontsize=layout.size + 4)
        y += 2 * pitch
        top = y
        for k, (label, value) in enumerate(record):
            page.insert_text((72, y), label, fontsize=layout.size, fontname=layout.font)
            page.insert_text((layout.value_x, y + layout.jitter), value, fontsize=layout.size,
                             fontname=layout.font)  # fmt: skip
            item = k - layout.beside_row
            if 0 <= item < len(layout.beside):
                name, amount = layout.beside[item]
                later += [(340, y, name), (460, y, amount)]
                if not layout.blockwise:
                    for x, at, text in later:
                        page.insert_text((x, at), text, fontsize=layout.size, fontname=layout.font)
                    later.clear()
            y += pitch
        for x, at, text in later:
            page.insert_text((x, at), text, fontsize=layout.size, fontname=layout.font)
        later.clear()
        for item in range(len(record) - layout.beside_row, len(layout.beside)):
            name, amount = layout.beside[item]  # items running on below the record
            page.insert_text((340, y), name, fontsize=layout.size, fontname=layout.font)
            page.insert_text((460, y), amount, fontsize=layout.size, fontname=layout.font)
            y += pitch
        if layout.paragraph:
            box = pymupdf.Rect(340, top - layout.size, 540, top + 8 * pitch)
            page.insert_textbox(box, PROSE, fontsize=layout.size - 1, fontname=layout.font)
        y += 2 * pitch
    return document.tobytes()


def _rows(markdown: str) -> list[list[str]]:
    """Every table row's cells, the delimiter rows left out."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith("|") and not re.fullmatch(r"\|( *-{3,} *\|)+", line)
    ]


def _convert(data: bytes) -> Conversion:
    return PdfConverter().convert(data)


def _assert_rows_apart(layout: _Layout, conversion: Conversion) -> None:
    """Every label/value row is a two-cell row of a table, its value on no other
    line, and no line holds two rows' values (nor a row of the block beside)."""
    markdown = conversion.markdown
    rows = _rows(markdown)
    expected = [row for record in layout.records for row in record] + layout.beside
    for label, value in expected:
        assert [label, value] in rows, (label, value, markdown)
    values = [value for _, value in expected]
    for line in markdown.splitlines():
        held = [value for value in values if value in line]
        assert len(held) <= 1, f"rows share a line: {line!r}"


def _assert_cells_boxed(data: bytes, conversion: Conversion) -> None:
    """Each table cell's recorded box holds the cell's words (by their centres),
    and every chunk location's boxes hold its own words and no others."""
    markdown = conversion.markdown
    checked = 0
    with pymupdf.open(stream=data, filetype="pdf") as document:
        for span in conversion.spans:
            line_start = markdown.rfind("\n", 0, span.char_start) + 1
            if not markdown.startswith("|", line_start):
                continue
            box = pymupdf.Rect(span.x0, span.y0, span.x1, span.y1)
            words = document[span.page_number - 1].get_text("words")
            inside = [w[4] for w in words if box.contains(_centre(w))]
            text = markdown[span.char_start : span.char_end]
            assert text.split() == inside, (text, inside)
            checked += 1
    assert checked
    foreign, left_out = _box_check(data, narrowed=True)
    assert foreign == [] and left_out == [], (foreign[:5], left_out[:5])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("records", [1, 2])
def test_every_row_of_a_borderless_form_is_its_own_table_row(seed: int, records: int) -> None:
    layout = _layout(seed, records=records)
    data = _pdf(layout)
    conversion = _convert(data)
    _assert_rows_apart(layout, conversion)
    assert conversion.metadata["tables"] == records
    assert "|  |  |\n| --- | --- |\n| Customer name |" in conversion.markdown  # empty header
    _assert_cells_boxed(data, conversion)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("beside_row", [1, 3])
@pytest.mark.parametrize("blockwise", [False, True])
def test_line_items_beside_a_record_are_a_table_of_their_own(
    seed: int, beside_row: int, blockwise: bool
) -> None:
    """A block of line items starting beside a lower row of the record (its rows on
    the record's baselines, drawn row by row or after the record) is a second
    table: no row of it joins a record row."""
    layout = _layout(seed, records=1 + seed % 2, beside="items", beside_row=beside_row)
    layout.blockwise = blockwise
    data = _pdf(layout)
    conversion = _convert(data)
    _assert_rows_apart(layout, conversion)
    assert conversion.metadata["tables"] == 2 * len(layout.records)
    _assert_cells_boxed(data, conversion)


def test_forms_side_by_side_from_one_row_are_one_grid_of_both() -> None:
    """Two forms starting on one row read across as one grid (as a two-column DOCX
    form with two fields a row is written): each form keeps its own two columns."""
    layout = _layout(3, records=1, beside="items", beside_row=0)
    conversion = _convert(_pdf(layout))
    rows = _rows(conversion.markdown)
    record = layout.records[0]
    for k, (label, value) in enumerate(record):
        item = list(layout.beside[k]) if k < len(layout.beside) else ["", ""]
        assert [label, value, *item] in rows


@pytest.mark.parametrize("seed", range(4))
def test_a_form_beside_a_paragraph_leaves_the_paragraph_prose(seed: int) -> None:
    layout = _layout(seed, records=1, beside="paragraph")
    data = _pdf(layout)
    conversion = _convert(data)
    _assert_rows_apart(layout, conversion)
    assert conversion.metadata["tables"] == 1
    assert "The vehicle was inspected on arrival" in conversion.markdown
    assert not any("inspected" in cell for row in _rows(conversion.markdown) for cell in row)
    _assert_cells_boxed(data, conversion)


def test_a_value_wrapped_under_itself_stays_in_its_row() -> None:
    """An address set under its first line in the value column is that row's value,
    its cell's box around all its lines; the row after it is a row of its own."""
    document = pymupdf.open()
    page = document.new_page()
    rows = [("Customer name", "Olga Berg"), ("Address", "12 Harbour Road"), ("", "Bergen 5003"),
            ("", "Norway"), ("Phone", "+47 5555 0100")]  # fmt: skip
    for k, (label, value) in enumerate(rows):
        if label:
            page.insert_text((72, 100 + 14 * k), label, fontsize=10)
        page.insert_text((180, 100 + 14 * k), value, fontsize=10)
    data = document.tobytes()
    conversion = _convert(data)
    assert _rows(conversion.markdown) == [
        ["", ""],
        ["Customer name", "Olga Berg"],
        ["Address", "12 Harbour Road Bergen 5003 Norway"],
        ["Phone", "+47 5555 0100"],
    ]
    _assert_cells_boxed(data, conversion)


def test_label_value_lines_with_colons_stay_lines() -> None:
    """Labels that end in a colon set the page's own "Label: value" apart: such a
    form stays a line a row, as the form converters' other layouts read it, and a
    block beside it no row of its own (markitdown's booking order)."""
    name = "markitdown/test_files/movie-theater-booking-2024.pdf"
    markdown = _convert((CORPUS / name).read_bytes()).markdown
    assert "\nOrder Type: Premium Package\n\nCinema: Downtown Multiplex\n" in markdown
    assert ["Cinema:", "Downtown Multiplex"] not in _rows(markdown)


def _lines_pdf(lines: list[list[tuple[float, str]]], size: float = 10) -> bytes:
    """Lines of text (x of each run, the run) one under the other."""
    document = pymupdf.open()
    page = document.new_page()
    for k, runs in enumerate(lines):
        for x, text in runs:
            page.insert_text((x, 100 + 14 * k), text, fontsize=size)
    return document.tobytes()


@pytest.mark.parametrize(
    "lines",
    [
        # list items whose marker stands apart from the text
        [[(72, "\u2022"), (90, "Check the tyres")], [(72, "\u2022"), (90, "Top up the oil")]],
        [[(72, "1."), (90, "Introduction")], [(72, "2."), (90, "Methods and data")]],
        # a sentence beside a figure: no label
        [[(72, "The estimate was approved by the insurer on"), (330, "12 May")],
         [(72, "The repair was finished and handed over on"), (330, "20 May")]],
        # one row alone, and rows whose labels do not start at one x
        [[(72, "Phone"), (180, "+1 555 0100")]],
        [[(72, "Phone"), (180, "+1 555 0100")], [(120, "Policy"), (180, "POL 1")]],
    ],
)  # fmt: skip
def test_lines_that_are_no_form_stay_text(lines: list[list[tuple[float, str]]]) -> None:
    conversion = _convert(_lines_pdf(lines))
    assert conversion.metadata["tables"] == 0
    assert not _rows(conversion.markdown)


def test_a_two_column_page_of_prose_is_no_form() -> None:
    """Justified prose in two columns: each line of a column is one cell."""
    document = pymupdf.open()
    page = document.new_page()
    for x in (56, 316):
        page.insert_textbox(pymupdf.Rect(x, 72, x + 240, 500), PROSE * 4, fontsize=10, align=3)
    conversion = _convert(document.tobytes())
    assert conversion.metadata["tables"] == 0


def test_a_form_of_thousands_of_rows_is_one_table_row_by_row() -> None:
    """A hostile page of 3,000 rows (3 pt type on a page 14,000 pt tall): one table,
    every row its own, read in linear time (it converts like any page)."""
    document = pymupdf.open()
    page = document.new_page(width=300, height=14_000)
    count = 3_000
    writer = pymupdf.TextWriter(page.rect)  # one content stream: insert_text is slow
    for n in range(count):
        writer.append((10, 10 + 4.5 * n), f"Label {n}", fontsize=3)
        writer.append((60, 10 + 4.5 * n), f"value {n}", fontsize=3)
    writer.write_text(page)
    conversion = _convert(document.tobytes())
    rows = _rows(conversion.markdown)
    assert conversion.metadata["tables"] == 1
    assert rows[1:] == [[f"Label {n}", f"value {n}"] for n in range(count)]
