"""PDF converter on the shared corpus: structure, page map, boxes, hostile files."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pymupdf
import pytest

from documents.converters import ConversionError
from documents.converters._hyphenation import LineEndHyphens
from documents.converters.base import Conversion
from documents.converters.pdf import PdfConverter
from documents.converters.pdf.extract import TEXT_FLAGS
from documents.converters.sandbox import convert_isolated
from documents.markdown_structure import MarkdownStructure
from tests.support.corpus import CORPUS, corpus_files, nonempty
from tests.support.ground_truth import recall

SKIP_DIRS = ("groundtruth", "expected_outputs")
PDFS = nonempty(
    sorted(
        p.relative_to(CORPUS).as_posix()
        for d in ("markitdown", "docling", "py-pdf-sample-files", "pymupdf")
        for p in (CORPUS / d).rglob("*.pdf")
        if not any(s in p.parts for s in SKIP_DIRS)
    ),
    "corpus PDFs",
)
SCAN = "markitdown/test_files/MEDRPT-2024-PAT-3847_medical_report_scan.pdf"
HOSTILE = corpus_files("*.pdf", under="hostile")


def convert(name: str) -> Conversion:
    return PdfConverter().convert((CORPUS / name).read_bytes())


def headings(markdown: str) -> list[tuple[int, str]]:
    return [(len(m.group(1)), m.group(2)) for m in re.finditer(r"^(#{1,6}) (.+)$", markdown, re.M)]


def test_corpus_lists_pdfs() -> None:
    assert len(PDFS) >= 20 and SCAN in PDFS


@pytest.mark.parametrize("name", PDFS)
def test_every_corpus_pdf_converts_with_a_consistent_location_map(name: str) -> None:
    if name == SCAN:
        with pytest.raises(ConversionError, match="no text layer"):
            convert(name)
        return
    result = convert(name)
    md = result.markdown
    assert md.strip()
    assert len(result.line_pages) == len(md.split("\n"))
    page_count = result.page_count
    assert page_count and all(p is not None and 1 <= p <= page_count for p in result.line_pages)
    assert result.spans
    for span in result.spans:
        assert 0 <= span.char_start < span.char_end <= len(md)
        assert md[span.char_start : span.char_end].strip()
        assert 1 <= span.page_number <= page_count
        # the span's line is attributed to the span's page
        line = md.count("\n", 0, span.char_start)
        assert result.line_pages[line] == span.page_number
    for level, text in headings(md):
        assert 1 <= level <= 6 and text.strip()


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


@pytest.mark.parametrize(
    "name",
    [
        "markitdown/test_files/test.pdf",
        "py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf",
        "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
        "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf",
        "docling/pdf/code_and_formula.pdf",
        "markitdown/test_files/movie-theater-booking-2024.pdf",
    ],
)
def test_span_words_are_inside_their_boxes_on_their_page(name: str) -> None:
    """Invariant 2, checked independently with PyMuPDF's own word extraction."""
    result = convert(name)
    doc = pymupdf.open(CORPUS / name)
    checked = 0
    for span in result.spans:
        page = doc[span.page_number - 1]
        box = pymupdf.Rect(span.x0, span.y0, span.x1, span.y1) + (-2, -2, 2, 2)
        found = _norm("".join(w[4] for w in page.get_text("words", clip=box, flags=TEXT_FLAGS)))
        for word in re.findall(r"\w+", result.markdown[span.char_start : span.char_end]):
            assert _norm(word) in found, (name, span, word)
            checked += 1
    assert checked > 50


def test_ground_truth_recall() -> None:
    """Word recall of docling / markitdown expected Markdown (floors measured, not guessed)."""
    pairs = [
        (f"docling/pdf/{p.stem}.pdf", p) for p in (CORPUS / "docling/pdf/groundtruth").glob("*.md")
    ]
    pairs += [
        (f"markitdown/test_files/{p.stem}.pdf", p)
        for p in (CORPUS / "markitdown/test_files/expected_outputs").glob("*.md")
        if p.read_text("utf-8").strip()
    ]
    scores = {
        name: recall(truth.read_text("utf-8"), convert(name).markdown) for name, truth in pairs
    }
    print("\n".join(f"{v:.3f} {k}" for k, v in sorted(scores.items())))
    assert len(scores) == 8
    assert min(scores.values()) >= 0.93  # right_to_left_01.pdf 0.936
    assert sum(scores.values()) / len(scores) >= 0.975  # 0.982
    assert scores["docling/pdf/table_mislabeled_as_picture.pdf"] >= 0.945  # 0.950
    assert scores["markitdown/test_files/test.pdf"] >= 0.95
    assert scores["docling/pdf/right_to_left_01.pdf"] >= 0.92


def test_arabic_lam_alef_ligatures_keep_their_letters_in_logical_order() -> None:
    """MuPDF reads the ligature's alef before its lam in right-to-left text ("اإل");
    the page shows lam then alef, as every word starting with the article "ال" has it."""
    name = "docling/pdf/right_to_left_01.pdf"
    markdown = convert(name).markdown
    for word in ("الإنتاجية", "المشكلات", "خلال", "الأدوات", "الإحصائية"):
        assert word in markdown, word
    for broken in ("اإلنتاجية", "المشكالت", "خالل", "األدوات"):
        assert broken not in markdown, broken
    pages = pymupdf.open(CORPUS / name).pages()
    raw = "".join(page.get_text("text", flags=TEXT_FLAGS) for page in pages)
    assert "اإلنتاجية" in raw  # what MuPDF itself gives: the fix is ours
    assert "أيضًا" in markdown and "أيضاً" not in markdown  # a vowel sign stays where it is
    assert "إلى" in markdown  # a real alef-lam (not a ligature) is left alone


def test_wrapped_lines_of_arabic_are_one_paragraph() -> None:
    """MuPDF gives each wrapped line of the Arabic page a block of its own; its four
    paragraphs (docling's ground truth has four) are one Markdown line each, cut
    where the page leaves a blank line, not at every wrapped line."""
    lines = convert("docling/pdf/right_to_left_01.pdf").markdown.strip().split("\n")
    assert lines[0].startswith("# ")
    paragraphs = [line for line in lines[1:] if line]
    assert len(paragraphs) == 4 and len(lines) == 9
    assert paragraphs[0].startswith("تعتبر البرمجة بلغة R وPython")
    assert paragraphs[0].endswith("بشكل كبير في تحسين نتائج العمل.")
    assert paragraphs[1].startswith("عندما يجتمع التفكير التحليلي")
    assert paragraphs[3].endswith("على الأداء الشخصي والمهني.")


# a font with Hebrew letters (Debian's fonts-dejavu-core; ``make test`` installs it)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def test_short_lines_of_hebrew_each_a_block_stay_apart() -> None:
    """An address set line by line (MuPDF gives each a block) is no wrapped
    paragraph: the lines stop far short of the column's left end."""
    document = pymupdf.open()
    page = document.new_page()
    page.insert_font(fontname="dejavu", fontfile=DEJAVU)
    font = pymupdf.Font(fontfile=DEJAVU)
    lines = ["כתובת המשרד", "רחוב הרצל", "", "שלום לכם חברים, זו פסקה חדשה וארוכה יותר מהכתובת."]
    for row, text in enumerate(lines):
        visual = text[::-1]  # drawn left to right as the page shows it
        width = font.text_length(visual, fontsize=11)
        page.insert_text((500 - width, 100 + 16 * row), visual, fontsize=11, fontname="dejavu")
    markdown = PdfConverter().convert(document.tobytes()).markdown
    assert "כתובת המשרד רחוב הרצל" not in markdown
    assert "כתובת המשרד" in markdown and "רחוב הרצל" in markdown


def test_zero_width_arabic_glyphs_other_than_lam_alef_keep_their_order() -> None:
    """One glyph carrying a whole word gives zero-width letters after the first one."""
    markdown = convert("py-pdf-sample-files/015-arabic/habibi-rotated.pdf").markdown
    assert markdown.count("حَبيبي") == 8


def test_markitdown_strings() -> None:
    vectors = json.loads((CORPUS / "markitdown/DERIVED_test_vectors.json").read_text("utf-8"))
    vector = next(v for v in vectors["GENERAL_TEST_VECTORS"] if v["filename"] == "test.pdf")
    md = convert("markitdown/test_files/test.pdf").markdown
    for s in nonempty(vector["must_include"], "strings test.pdf must include"):
        assert s in md
    # markitdown names nothing test.pdf must leave out: a loop over it would check nothing
    assert vector["must_not_include"] == [], "strings test.pdf must not include: check them"
    receipts = {
        "markitdown/test_files/movie-theater-booking-2024.pdf": [
            "BOOKING ORDER",
            "STARLIGHT CINEMAS",
            "2024-12-5678",
            "Holiday Spectacular",
            "$12,500.00",
        ],
        "markitdown/test_files/SPARSE-2024-INV-1234_borderless_table.pdf": [
            "INVENTORY RECONCILIATION REPORT",
            "SKU-8847",
            "SKU-9201",
            "Variance Analysis",
        ],
        "markitdown/test_files/RECEIPT-2024-TXN-98765_retail_purchase.pdf": [
            "TECHMART ELECTRONICS",
            "TXN-98765-2024",
            "Sarah Mitchell",
            "$821.14",
            "RETURN POLICY",
        ],
        "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf": [
            "ZAVA AUTO REPAIR",
            "Gabriel Diaz",
            "Grand Cherokee",
            "GRAND TOTAL",
        ],
    }
    for name, strings in receipts.items():
        md = convert(name).markdown
        for s in strings:
            assert s in md, (name, s)


def test_masterformat_partial_numbers_stay_with_their_text() -> None:
    md = convert("markitdown/test_files/masterformat_partial_numbering.pdf").markdown
    lines = [ln.strip() for ln in md.split("\n")]
    assert not any(re.fullmatch(r"[-*]?\s*\.\d+", ln) for ln in lines)
    assert any(".1 The intent of this Request for Proposal" in ln for ln in lines)


def test_multicolumn_reading_order_reads_column_one_before_column_two() -> None:
    result = convert("py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf")
    md = result.markdown
    # \lipsum[1] opens column 1 of page 1; \lipsum[4] ("Quisque ullamcorper") starts column 2
    first = md.index("Lorem ipsum dolor sit amet, consectetuer adipiscing elit. Ut purus elit")
    left_end = md.index("Nulla malesuada porttitor diam")
    right = md.index("Quisque ullamcorper placerat ipsum")
    assert first < left_end < right
    # the paragraph that continues at the top of column 2 comes right after column 1's text
    assert md.index("pellentesque ante. Phasellus adipiscing") > left_end
    # a booktabs table has no vertical rules: its aligned cells make it a table all the same
    assert "| Austria | 8.9 | 83,879 | Vienna | German |" in md
    assert md.index("| Austria |") < md.index("| Finland | 5.5 | 338,424 | Helsinki |")
    assert headings(md)[0] == (1, "Two-Column Document with Lorem Ipsum")


def test_outline_headings_become_markdown_headings() -> None:
    result = convert("py-pdf-sample-files/006-pdflatex-outline/pdflatex-outline.pdf")
    found = headings(result.markdown)
    assert [t for _lvl, t in found] == [
        "1 Foo",
        "2 Bar",
        "3 Baz",
        "4 Foo",
        "5 Bar",
        "6 Baz",
        "7 Foo",
        "8 Bar",
        "9 Baz",
    ]
    assert result.metadata["headings_from"] == "outline"
    lines = result.markdown.split("\n")
    assert result.line_pages[lines.index("# 5 Bar")] == 3  # outline says Bar #2 is on page 3
    bookmarks = headings(convert("docling/pdf/bookmark_sample.pdf").markdown)
    assert (1, "PART II - OBLIGATIONS") in bookmarks and (3, "3.1 Payment Schedule") in bookmarks


def test_mistitled_outline_is_not_trusted() -> None:
    result = convert("py-pdf-sample-files/014-outlines/mistitled_outlines_example.pdf")
    titles = [t for _lvl, t in headings(result.markdown)]
    assert result.metadata["headings_from"] == "font"
    assert not {"First", "Second", "Tenth", "Nineteenth"} & set(titles)
    assert "1 Foo" in titles  # the real on-page headings still are headings


def test_page_numbers_are_kept_out_of_the_body() -> None:
    for name in (
        "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
        "py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf",
    ):
        result = convert(name)
        assert not [
            ln for ln in result.markdown.split("\n") if re.fullmatch(r"\d{1,3}", ln.strip())
        ]
        assert result.page_count is not None
        assert result.metadata["header_footer_lines_dropped"] >= result.page_count - 1
    md = convert("docling/pdf/bookmark_sample.pdf").markdown
    assert "Sample Agreement — page" not in md  # running header repeated on every page
    assert (
        md.count("This clause is provided for demonstration purposes") == 8
    )  # one per outline entry


def test_page_n_of_m_near_the_top_or_foot_is_no_body_text() -> None:
    """A one-page booking order prints "Page 1 of 1" under its print date, and a
    specification's header "Ken Sargent House   Page 1 of 8": both are page numbers
    (one page gives no repetition to find them by); the same words mid-page stay."""
    movie = convert("markitdown/test_files/movie-theater-booking-2024.pdf").markdown
    assert "Page 1 of 1" not in movie and "Print Date 12/15/2024 14:30:22" in movie
    spec = convert("markitdown/test_files/masterformat_partial_numbering.pdf").markdown
    assert "\nKen Sargent House\n" in spec and "Page 1 of 8" not in spec

    def draw(page: pymupdf.Page) -> None:
        y = _body_lines(page, 300, 4) + 12
        page.insert_text((72, y), "Page 2 of 8", fontname="helv", fontsize=10)
        _body_lines(page, y + 24, 4)

    assert "\nPage 2 of 8\n" in PdfConverter().convert(_pdf(draw)).markdown


def test_numbers_in_a_margin_block_of_text_stay() -> None:
    """Only a block of footer text in the margin loses its page number: a caption
    over a row of years at the top of a page keeps its years; words that read as
    Roman numerals ("Civil") are no page numbers there."""

    def draw(page: pymupdf.Page) -> None:
        page.insert_text((72, 40), "Revenue by year (in thousands)", fontsize=10)
        page.insert_text((72, 52), "2019 2020", fontsize=10)
        page.insert_text((72, 810), "Department of", fontsize=10)
        page.insert_text((72, 822), "Civil", fontsize=10)
        _body_lines(page, 100, 20)

    markdown = PdfConverter().convert(_pdf(draw)).markdown
    assert "2019 2020" in markdown and "Civil" in markdown


def test_a_title_beside_small_print_on_its_row_is_a_heading() -> None:
    """The booking order sets "BOOKING ORDER" (16 pt bold) and its print date (8 pt)
    far apart on one row, in one MuPDF block: the title heads the document and its
    sections sit under it; the print date is a line of its own."""
    markdown = convert("markitdown/test_files/movie-theater-booking-2024.pdf").markdown
    assert headings(markdown)[:3] == [(1, "BOOKING ORDER"), (2, "STARLIGHT CINEMAS"), (2, "Orders")]
    assert "\nPrint Date 12/15/2024 14:30:22\n" in markdown


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        (
            "markitdown/test_files/movie-theater-booking-2024.pdf",
            ["Cinema: Downtown Multiplex", "Primary Contact: Sarah Johnson", "Location: NYC-01"],
        ),
        (
            "markitdown/test_files/SPARSE-2024-INV-1234_borderless_table.pdf",
            ["Report ID: SPARSE-2024-INV-1234", "Warehouse: Distribution Center East"],
        ),
        (
            "markitdown/test_files/RECEIPT-2024-TXN-98765_retail_purchase.pdf",
            ["Cashier: Emily Rodriguez", "Register: POS-07"],
        ),
    ],
)
def test_a_forms_label_value_lines_stay_lines_of_their_own(name: str, lines: list[str]) -> None:
    """A form sets its labels in one column and their values in the next, a pair a
    row: each "Label: value" stays a line, not one paragraph of every pair ("Cinema:
    Downtown Multiplex Primary Contact: Sarah Johnson …" names no field's end)."""
    assert "\n" + "\n".join(lines) + "\n" in convert(name).markdown


def test_label_value_lines_drawn_as_a_form_are_lines_and_prose_stays_a_paragraph() -> None:
    """The same for a form drawn here (labels at one x, values at another), while a
    paragraph whose wrapped lines hold a colon is still one paragraph."""

    def draw(page: pymupdf.Page) -> None:
        for n, (label, value) in enumerate(
            [
                ("Carrier:", "Northwind Freight"),
                ("Tracking No:", "NW-4471-88"),
                ("Weight:", "12 kg"),
            ]
        ):
            page.insert_text((72, 100 + 14 * n), label, fontname="helv", fontsize=10)
            page.insert_text((170, 100 + 14 * n), value, fontname="helv", fontsize=10)
        prose = (
            "The shipment left the warehouse on Monday and was delayed at the border for two",
            "days: customs asked for the invoice again because the first copy had no stamp",
            "and the carrier had to send a courier back with the signed and stamped original.",
        )
        for n, text in enumerate(prose):
            page.insert_text((72, 200 + 12 * n), text, fontname="helv", fontsize=10)

    markdown = PdfConverter().convert(_pdf(draw)).markdown
    assert "Carrier: Northwind Freight\nTracking No: NW-4471-88\nWeight: 12 kg\n" in markdown
    assert "for two days: customs asked" in markdown


def test_facing_page_numbers_in_a_footer_are_no_body_text() -> None:
    """The legal-aid annex prints two pages on one sheet: MuPDF reads their numbers
    "208" and "209" as one line of the footer's block."""
    markdown = convert("docling/pdf/table_mislabeled_as_picture.pdf").markdown
    assert "208" not in markdown and "209" not in markdown
    assert "\nGlobal Study on Legal Aid — Global Report Annex" in markdown


def test_paragraph_page_attribution() -> None:
    result = convert("py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    assert None not in result.line_pages
    pages = sorted({p for p in result.line_pages if p is not None})
    assert pages == [1, 2, 3, 4]
    lines = result.markdown.split("\n")
    assert lines[0].startswith("Hello, here is some text without a meaning")
    assert result.line_pages[0] == 1


def test_a_paragraph_cut_by_a_page_break_goes_on_on_the_next_line() -> None:
    """One blind-text paragraph runs over all four pages: it stays one Markdown
    paragraph (no blank line between its pages' lines), each line on its own page."""
    result = convert("py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    lines = result.markdown.split("\n")
    assert lines[0].endswith("you will get no") and lines[1].startswith("information. Really?")
    assert lines[1].endswith("gives") and lines[2].startswith("you information about")
    assert lines[2].endswith("should be written") and lines[3].startswith("in of the original")
    assert result.line_pages[:4] == [1, 2, 3, 4]
    assert lines[4] == ""


def test_a_paragraph_cut_by_a_column_or_page_break_is_one_paragraph() -> None:
    md = convert("py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf").markdown
    lines = md.split("\n")
    # column 1's foot to column 2's head, same page: one line, as the words read
    assert "Donec nonummy pellentesque ante. Phasellus adipiscing" in md
    assert "faucibus orci luctus et ultrices posuere cubilia Curae" in md
    # page 1's last column to page 2's first: the next line of the same paragraph
    cut = next(i for i, ln in enumerate(lines) if ln.endswith("Nam feugiat"))
    assert lines[cut + 1] == "lacus vel est. Curabitur consectetuer."
    # paragraphs that end on a full stop stay apart
    assert "Pellentesque cursus luctus mauris.\n\nNulla malesuada porttitor diam." in md


def test_run_in_items_with_a_hanging_indent_are_paragraphs_of_their_own() -> None:
    """The AutoGen paper numbers its points "1 Title." with the text indented under
    the title; the second point starts back at the edge after the first's last line."""
    lines = convert("markitdown/test_files/test.pdf").markdown.split("\n")
    first = next(i for i, ln in enumerate(lines) if ln.startswith("1 Customizable and"))
    assert lines[first].endswith("in a modular fashion. (Section 2.1)")
    assert lines[first + 1] == ""
    assert lines[first + 2].startswith("2 Conversation programming. A fundamental insight")


def _set_lines(rows: list[tuple[float, str]]) -> list[str]:
    """Markdown lines (blank ones too) of one block of 10 pt lines, each ``(left
    edge, text)``."""

    def draw(page: pymupdf.Page) -> None:
        for row, (x, text) in enumerate(rows):
            page.insert_text((x, 80 + 12 * row), text, fontname="helv", fontsize=10)

    return PdfConverter().convert(_pdf(draw)).markdown.strip("\n").split("\n")


def test_a_line_back_at_the_edge_ends_a_hanging_indent_but_not_a_first_line_indent() -> None:
    full = BODY[:83]  # "... as they": a full line
    # the first item's last line stops 10 % short of the edge, as in the paper
    last = full[:70]
    hanging = _set_lines([(72, f"1 {full}"), (84, full), (84, last), (72, f"2 {full}")])
    assert hanging == [f"1 {full} {full} {last}", "", f"2 {full}"]
    # a first-line indent: the first line runs to the edge, the next goes on at the left
    indented = _set_lines([(84, full), (72, full), (72, "and ends here.")])
    assert indented == [f"{full} {full} and ends here."]
    # ragged right: an indented first line that stops short is no hanging indent
    ragged = _set_lines([(92, full[:60]), (72, full), (72, "and ends here.")])
    assert "" not in ragged


CUT = "and the signed records of each party to this agreement shall stay in the keeping of the"


def test_lines_set_a_sentence_each_stay_apart() -> None:
    """The Google Doc sample sets the Zen of Python a maxim per line, ragged right:
    a maxim that nearly reaches the edge is no wrapped line of the next one."""
    lines = convert(
        "py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf"
    ).markdown.split("\n")
    for maxim in (
        "There should be one-- and preferably only one --obvious way to do it.",
        "Although that way may not be obvious at first unless you're Dutch.",
        "Now is better than never.",
        "If the implementation is easy to explain, it may be a good idea.",
        "Namespaces are one honking great idea -- let's do more of those!",
    ):
        assert maxim in lines, maxim
    # a ragged paragraph where some lines happen to end a sentence stays one
    prose = [
        "The board met on Monday. It agreed on the budget for the",
        "coming year. The treasurer then read out the accounts, which",
        "showed a surplus. Members voted to carry it forward into the",
        "next financial year rather than spend it on new equipment for",
        "the hall and the office.",
    ]
    assert _set_lines([(72, text) for text in prose]) == [" ".join(prose)]


def _two_pages(first_end: str, second_start: str) -> bytes:
    """A page whose last paragraph ends with ``first_end`` on a full line, then a
    page that opens with ``second_start``."""
    document = pymupdf.open()
    for lines in ([BODY[:86]] * 4 + [first_end], [second_start] + [BODY[:86]] * 4):
        page = document.new_page(width=595, height=842)
        for row, line in enumerate(lines):
            page.insert_text((72, 72 + 12 * row), line, fontname="helv", fontsize=10)
    return document.tobytes()


def test_a_footnote_at_a_page_s_foot_is_not_joined_to_the_next_page() -> None:
    """A one-line footnote in small type, without a full stop, ends its page's text:
    the lowercase start of the next page continues the body, not the footnote."""
    document = pymupdf.open()
    page = document.new_page(width=595, height=842)
    for row in range(5):
        page.insert_text((72, 72 + 12 * row), BODY[:86] + ".", fontname="helv", fontsize=10)
    page.insert_text((72, 780), "1 See https://example.org/dataset", fontname="helv", fontsize=7)
    page = document.new_page(width=595, height=842)
    page.insert_text((72, 72), "continues the body on this page " + BODY[:40], fontname="helv",
                     fontsize=10)  # fmt: skip
    lines = PdfConverter().convert(document.tobytes()).markdown.split("\n")
    note = lines.index("1 See https://example.org/dataset")
    assert lines[note + 1] == ""


@pytest.mark.parametrize(
    ("first_end", "second_start", "joined"),
    [
        (CUT, "clerk of the court for six years.", True),
        (CUT[:-4] + " court.", "then the court decides.", False),  # a sentence ended
        (CUT, "Clerk of the Court keeps them.", False),  # a new sentence begins
    ],
)
def test_only_a_paragraph_cut_mid_sentence_goes_on_across_a_page(
    first_end: str, second_start: str, joined: bool
) -> None:
    result = PdfConverter().convert(_two_pages(first_end, second_start))
    lines = result.markdown.split("\n")
    last_of_page_1 = max(i for i, page in enumerate(result.line_pages) if page == 1 and lines[i])
    assert lines[last_of_page_1].endswith(first_end.split()[-1])
    follower = lines[last_of_page_1 + 1]
    assert (follower == "") is not joined
    if joined:
        assert follower.startswith(second_start.split()[0])
        assert result.line_pages[last_of_page_1 + 1] == 2


def test_dehyphenation_joins_words() -> None:
    md = convert("markitdown/test_files/test.pdf").markdown
    assert "leverage LLMs" in md and "lever-" not in md


def test_encrypted_scan_and_not_a_pdf() -> None:
    with pytest.raises(ConversionError, match="encrypted"):
        convert("hostile/py-pdf/libreoffice-writer-password.pdf")
    with pytest.raises(
        ConversionError,
        match="^no text layer: this PDF contains only images; OCR is not supported yet$",
    ):
        convert(SCAN)
    with pytest.raises(ConversionError, match="could not read this PDF"):
        PdfConverter().convert(b"this is not a PDF at all")
    with pytest.raises(ConversionError):
        PdfConverter().convert(b"")


def test_invisible_text_without_an_image_is_dropped() -> None:
    """Render-mode-3 text over nothing is a hidden layer (prompt-injection vector), not content."""
    result = convert("hostile/docling/invisible_text_layer.pdf")
    assert "Visible heading line" in result.markdown
    assert "Invisible OCR text layer" not in result.markdown
    assert result.metadata["hidden_text_lines_dropped"] == 1


def test_recoverable_damaged_pdfs_keep_their_text() -> None:
    assert "Hello World" in convert("hostile/pymupdf/test2238.pdf").markdown
    circular = convert("hostile/pymupdf/circular-toc.pdf")
    assert "Page1" in circular.markdown and "Page2" in circular.markdown
    assert circular.line_pages[circular.markdown.split("\n").index("Page2")] == 2


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_pdfs_fail_cleanly_in_the_sandbox(name: str) -> None:
    try:
        result = convert_isolated((CORPUS / name).read_bytes(), "pdf", timeout_s=60)
    except ConversionError as exc:
        assert exc.reason and "Traceback" not in exc.reason
    else:
        assert len(result.line_pages) == len(result.markdown.split("\n"))


LEGAL_AID = "docling/pdf/table_mislabeled_as_picture.pdf"


def test_pictograph_checkboxes_are_list_markers_and_control_characters_are_dropped() -> None:
    """The survey's checkboxes are Wingdings glyphs MuPDF maps to U+FFFD, drawn beside a
    DingbatsTwo glyph mapped to the control character U+0084: each pair is one marker."""
    md = convert(LEGAL_AID).markdown
    assert "\ufffd" not in md
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", md)
    items = re.findall(r"^- (.+)$", md, re.M)
    assert items[:3] == [
        "They work in parallel to State funded private practitioners who take assignments "
        "to represent people eligible for legal aid",
        "They coordinate appointments of private practitioners (ex officio, or panel "
        "appointments) to legal aid cases",
        "They supervise, coach or mentor private practitioners who take legal aid cases",
    ]
    assert sum(item.startswith(("Yes, at", "No")) for item in items) >= 8


def test_a_bold_paragraph_s_short_last_line_is_not_a_heading() -> None:
    md = convert(LEGAL_AID).markdown
    assert (
        "23. If your country has an institutional legal aid provider (e.g. public defender), "
        "what is the maximum caseload per lawyer at one time?" in md.split("\n")
    )
    assert not any("maximum caseload" in title for _level, title in headings(md))


def _raw_pdf(content: bytes, fonts: dict[str, bytes], more: tuple[bytes, ...] = ()) -> bytes:
    """A one-page PDF written by hand, for fonts PyMuPDF's helpers cannot make: a
    pictograph font whose codes map to control characters, a ToUnicode CMap. Fonts are
    objects 5, 6, ...; ``more`` objects follow them."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    ]
    font_refs = [b"/%s %d 0 R" % (name.encode(), 5 + i) for i, name in enumerate(fonts)]
    extra = [*fonts.values(), *more]
    resources = b"<< /Font << " + b" ".join(font_refs) + b" >> >>"
    objects.append(
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources "
        + resources
        + b" /Contents 4 0 R >>"
    )
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objects += extra
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def _to_unicode(pairs: bytes) -> bytes:
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def "
        b"/CMapName /X def /CMapType 2 def 1 begincodespacerange <00> <FF> endcodespacerange "
        + pairs
        + b" endcmap CMapName currentdict /CMap defineresource pop end end"
    )
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(cmap), cmap)


HELVETICA = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def test_pictograph_markers_lead_list_items_and_marks_that_mean_something_stay() -> None:
    def row(y: int, font: bytes, glyph: bytes, text: bytes) -> bytes:
        return b"BT /%s 10 Tf 72 %d Td (%s) Tj ET BT /F1 10 Tf 90 %d Td (%s) Tj ET " % (
            font, y, glyph, y, text,
        )  # fmt: skip

    content = (
        row(780, b"F2", b"\x84", b"First choice of the form")
        + row(764, b"F3", b"4", b"Customer data is encrypted at rest")
        + row(748, b"F4", b"\xfc", b"Access is reviewed every quarter")
        + row(732, b"F4", b"o", b"Backups are kept in a second region")
        + row(716, b"F4", b"l", b"A plain bullet point")
        + b"BT /F1 10 Tf 72 690 Td (Press the ) Tj /F2 10 Tf (\x84) Tj "
        b"/F1 10 Tf ( button to send the whole form.) Tj ET "
        b"BT /F2 10 Tf 72 674 Td (\x84) Tj /F1 10 Tf ( button at the bottom right.) Tj ET "
        b"BT /F1 10 Tf 72 650 Td (A closing sentence in plain text for the body size.) Tj ET"
    )
    fonts = {
        "F1": HELVETICA,
        "F2": b"<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats "
        b"/Encoding << /Differences [132 /uni0084] >> >>",
        "F3": b"<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats /ToUnicode 9 0 R >>",
        "F4": b"<< /Type /Font /Subtype /TrueType /BaseFont /Wingdings-Regular "
        b"/Encoding /WinAnsiEncoding >>",
    }
    cmap = _to_unicode(b"1 beginbfchar <34> <2714> endbfchar")
    result = PdfConverter().convert(_raw_pdf(content, fonts, (cmap,)))
    lines = result.markdown.split("\n")
    assert "- First choice of the form" in lines  # a glyph with no meaning: a marker
    assert "\u2714 Customer data is encrypted at rest" in lines  # a tick stays a tick
    assert "\u2713 Access is reviewed every quarter" in lines  # Wingdings "\xfc" is a tick
    assert "\u2610 Backups are kept in a second region" in lines  # Wingdings "o": a box
    assert "- A plain bullet point" in lines  # Wingdings "l": a bullet
    # an icon inside text, and one a word space before the text it starts: no markers
    assert "Press the button to send the whole form. button at the bottom right." in lines
    assert not any(line.startswith("- button") for line in lines)
    start = result.markdown.index("- First choice of the form")
    marker = [s for s in result.spans if s.char_start == start]
    assert marker and marker[0].x0 < 80  # the marker keeps the glyph's box at x 72


def test_control_characters_become_spaces_not_glue() -> None:
    """A font whose codes map to C0/C1 controls (a dash, an apostrophe, an ellipsis)."""
    content = (
        b"BT /F1 11 Tf 72 760 Td 14 TL (Opening hours 9\x9617 daily, years 1990\x972000.) Tj "
        b"T* (The tenant\x92s duty ends here\x85next clause applies.) Tj ET"
    )
    fonts = {
        "F1": b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << "
        b"/BaseEncoding /WinAnsiEncoding "
        b"/Differences [133 /uni0085 146 /uni001F 150 /uni0096 /uni0097] >> >>"
    }
    markdown = PdfConverter().convert(_raw_pdf(content, fonts)).markdown
    assert "Opening hours 9 17 daily, years 1990 2000." in markdown
    assert "The tenant s duty ends here next clause applies." in markdown
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", markdown)


def _pdf(draw: Callable[[pymupdf.Page], object]) -> bytes:
    document = pymupdf.open()
    page = document.new_page(width=595, height=842)
    draw(page)
    return document.tobytes()


BODY = (
    "Regular body text fills this page so that bold lines stay a minority of it, "
    "as they are in any real document."
)


def _body_lines(page: pymupdf.Page, y: float, rows: int) -> float:
    """``rows`` lines of body text from ``y`` down; returns where the next line goes."""
    for _ in range(rows):
        page.insert_text((72, y), BODY[:90], fontname="helv", fontsize=10)
        y += 12
    return y


def test_bold_headings_still_found_and_bold_paragraphs_not() -> None:
    def draw(page: pymupdf.Page) -> None:
        y = 80
        page.insert_text((72, y), "Scope and Terms of the", fontname="hebo", fontsize=10)
        page.insert_text((72, y + 12), "Delivery Agreement", fontname="hebo", fontsize=10)
        y += 28
        for _ in range(6):
            page.insert_text((72, y), BODY[:90], fontname="helv", fontsize=10)
            y += 12
        y += 12
        page.insert_text(
            (72, y), "Every party to this agreement shall keep the signed records of each of its",
            fontname="hebo", fontsize=10,
        )  # fmt: skip
        page.insert_text((72, y + 12), "deliveries for six years", fontname="hebo", fontsize=10)
        y += 36
        for _ in range(6):
            page.insert_text((72, y), BODY[:90], fontname="helv", fontsize=10)
            y += 12

    md = PdfConverter().convert(_pdf(draw)).markdown
    titles = [title for _level, title in headings(md)]
    assert titles == ["Scope and Terms of the Delivery Agreement"]
    assert (
        "Every party to this agreement shall keep the signed records of each of its deliveries "
        "for six years" in md.split("\n")
    )


def test_a_listing_in_a_fixed_width_font_is_fenced_line_by_line() -> None:
    result = convert("docling/pdf/code_and_formula.pdf")
    listing = "```\nfunction add(a, b) {\n    return a + b;\n}\nconsole.log(add(3, 5));\n```"
    assert listing in result.markdown
    assert result.metadata["code_listings"] == 1
    assert "Listing 1: Simple JavaScript Program" in result.markdown.split("\n")


def test_a_comment_in_a_listing_is_no_heading() -> None:
    """``# ...`` inside the fence is code: the sections around it keep their path."""

    def draw(page: pymupdf.Page) -> None:
        page.insert_text((72, 60), "Deployment", fontname="hebo", fontsize=16)
        y = _body_lines(page, 90, 8)
        for row, code in enumerate(["# restart the workers", "systemctl restart app", "    --now"]):
            page.insert_text((72, y + 12 + 11 * row), code, fontname="cour", fontsize=9)
        _body_lines(page, y + 60, 4)

    result = PdfConverter().convert(_pdf(draw))
    md = result.markdown
    assert "```\n# restart the workers\nsystemctl restart app\n    --now\n```" in md
    structure = MarkdownStructure(md)
    assert structure.hierarchy_at(md.index("systemctl")) == ["Deployment"]
    assert structure.hierarchy_at(len(md) - 2) == ["Deployment"]


def test_a_listing_cut_into_blocks_stays_one_fence_with_its_indents_and_blank_lines() -> None:
    """MuPDF starts a new block at an indent or a gap: the listing is still one."""
    advance = pymupdf.get_text_length("x", fontname="cour", fontsize=9)
    listing = [(0, "class A:"), (4, "def f(self, x):"), (8, "y = x    # aligned"),
               (8, "return y"), (0, ""), (4, "def g(self):"), (8, "return 2")]  # fmt: skip

    def draw(page: pymupdf.Page) -> None:
        y = _body_lines(page, 72, 6) + 12
        for indent, code in listing:
            if code:
                page.insert_text((72 + indent * advance, y), code, fontname="cour", fontsize=9)
            y += 11
        _body_lines(page, y + 12, 3)

    md = PdfConverter().convert(_pdf(draw)).markdown
    expected = "\n".join(" " * indent + code for indent, code in listing)
    assert f"```\n{expected}\n```" in md
    assert md.count("```") == 2


def test_a_lone_fixed_width_line_in_prose_is_no_listing() -> None:
    """A URL or a file name set in Courier between prose lines stays in its paragraph."""

    def draw(page: pymupdf.Page) -> None:
        y = _body_lines(page, 72, 6) + 12
        page.insert_text(
            (72, y), "The data of every experiment are in", fontname="helv", fontsize=10
        )
        page.insert_text((72, y + 12), "https://example.org/data", fontname="cour", fontsize=10)
        page.insert_text((72, y + 24), "under an open license.", fontname="helv", fontsize=10)

    result = PdfConverter().convert(_pdf(draw))
    assert "```" not in result.markdown and result.metadata["code_listings"] == 0
    assert "https://example.org/data" in result.markdown


def test_fixed_width_fonts_are_told_from_proportional_ones() -> None:
    from documents.converters.pdf.extract import MONO_FONT

    for name in ("Courier-Bold", "CMTT10", "LMMono10-Regular", "SourceCodePro", "Consolas"):
        assert MONO_FONT.search(name), name
    for name in ("MonotypeCorsiva", "Helvetica", "NimbusRomNo9L-Regu", "Code128"):
        assert not MONO_FONT.search(name), name


def test_a_document_set_wholly_in_courier_is_prose_not_code() -> None:
    result = convert("markitdown/test_files/RECEIPT-2024-TXN-98765_retail_purchase.pdf")
    assert "```" not in result.markdown and result.metadata["code_listings"] == 0


def test_line_end_hyphen_of_a_compound_is_kept() -> None:
    """test.pdf breaks "chat-optimized" and "conversation-centric" at their own hyphens;
    joining them made words nobody wrote, while "lever-/age" is still one word."""
    md = convert("markitdown/test_files/test.pdf").markdown
    assert "because chat-optimized LLMs" in md and "chatoptimized" not in md
    assert "via conversation-centric computation" in md
    assert "leverage LLMs" in md and "potentially" in md


def test_line_end_hyphens_ask_the_document_first_then_the_word_list() -> None:
    hyphens = LineEndHyphens(
        ["a data-base of note", "our notebook is here", "the rhon- then", "cus"]
    )
    # the document writes the compound whole: kept, though "database" is an English word
    assert hyphens.keeps_hyphen("stored in a data-", "base of records")
    # the document writes the word whole: joined, though both halves are words
    assert not hyphens.keeps_hyphen("my note-", "book")
    # the word list: a joined word is one word; two words without one are a compound
    assert not hyphens.keeps_hyphen("for every-", "thing")
    assert hyphens.keeps_hyphen("it is well-", "known")
    # neither half is a word (Latin, names): joined, as typesetters' hyphens are
    assert not hyphens.keeps_hyphen("nunc rhon-", "cus")
    # the document's word with an ending: "data-/sets" where the paper writes "dataset"
    papers = LineEndHyphens(["each dataset is split", "a timestamp per row"])
    assert not papers.keeps_hyphen("the data-", "sets are")
    assert not papers.keeps_hyphen("two time-", "stamped rows")
    assert papers.keeps_hyphen("the work-", "flows run")  # nothing says "workflow"
    # one-letter halves are no compound, and no letters means nothing to keep
    assert not hyphens.keeps_hyphen("an e-", "mail")
    assert not hyphens.keeps_hyphen("page 12-", "13")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # footnote marks in a table's cells: run together, they read as other numbers
        (
            "py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf",
            "| Population | 273.879.750^1^ | 83,190,556^2^ | 8,935,112^3^ |",
        ),
        ("py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf", "| Area (km^2^) |"),
        ("docling/pdf/code_and_formula.pdf", "a^2^ + 8 = 12"),  # an exponent in running text
        ("markitdown/test_files/test.pdf", "multi-agent approaches,^3^ we present AutoGen"),
    ],
)
def test_superscripts_stay_apart_from_the_text_they_follow(name: str, expected: str) -> None:
    """MuPDF flags text set small and raised; it is marked as Pandoc's ^…^, in the
    page's lines and in table cells (read from the word list, which joins it)."""
    markdown = PdfConverter().convert((CORPUS / name).read_bytes()).markdown
    assert expected in markdown


def test_glyphs_mapped_to_no_character_leave_no_replacement_characters() -> None:
    """habibi-rotated.pdf draws its Arabic word with glyphs that have no Unicode
    mapping (MuPDF's U+FFFD); they are nothing to read or search for, so they
    become a space between the words around them, not six "�"."""
    markdown = convert("py-pdf-sample-files/015-arabic/habibi-rotated.pdf").markdown
    assert "\ufffd" not in markdown
    assert "habibi حَبيبي" in markdown


def test_annotation_notes_are_a_comments_section_boxed_where_they_sit() -> None:
    """py-pdf's annotated sample (Text, Highlight, Ink, each with a note): the notes
    no page draws are written after the body, one line per note on its page, with
    the annotation's box (a highlight's: the text it marks, quoted)."""
    name = "py-pdf-sample-files/024-annotations/annotated_pdf.pdf"
    conversion = convert(name)
    markdown = conversion.markdown
    assert markdown.endswith(
        "# Comments\n\n"
        "- unknown author, note: This is a text annotation.\n"
        "- unknown author, 1990-04-28, highlight on “Line 1 Line 2”: Highlight comment\n"
        "- Lucas, ink mark: Hello world!\n"
    )
    assert conversion.metadata["comments"] == 3
    with pymupdf.open(CORPUS / name) as document:
        page = document[0]
        text_note, highlight, ink = list(_annotations(page))
        expected = {
            "This is a text annotation.": text_note.rect,
            "Highlight comment": pymupdf.Quad(highlight.vertices[:4]).rect
            | pymupdf.Quad(highlight.vertices[4:8]).rect,
            "Hello world!": ink.rect,
        }
    for note, rect in expected.items():
        start = markdown.index(note)
        (span,) = [s for s in conversion.spans if s.char_start <= start < s.char_end]
        assert span.page_number == 1
        assert (span.x0, span.y0, span.x1, span.y1) == pytest.approx(tuple(rect), abs=0.01)


def _annotations(page: pymupdf.Page) -> Iterator[pymupdf.Annot]:
    annotation = page.first_annot
    while annotation is not None:
        yield annotation
        annotation = annotation.next


def test_annotations_the_page_draws_or_without_a_note_are_not_comments() -> None:
    """Free text is drawn on the page (its words are already read), a link or a
    highlight without a note says nothing; a note's line breaks and control
    characters do not break its Markdown line; a flood of notes is bounded."""
    from documents.converters.pdf.thresholds import MAX_ANNOTATIONS

    document = pymupdf.open()
    page = document.new_page()
    page.insert_text((72, 100), "Quarterly figures were reviewed.", fontsize=11)
    page.add_freetext_annot((72, 200, 300, 230), "Drawn free text", fontsize=10)
    page.insert_link({"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(72, 90, 200, 104),
                      "uri": "https://example.com"})  # fmt: skip
    page.add_highlight_annot(pymupdf.Rect(72, 90, 200, 104))
    note = page.add_text_annot((400, 100), "Check\nthe\x07 totals")
    note.set_info(title="Ann Auditor", modDate="D:20240131120000")
    note.update()
    flood = document.new_page()  # written as objects: PyMuPDF adds annotations slowly
    notes = []
    for index in range(MAX_ANNOTATIONS + 5):
        xref = document.get_new_xref()
        x, y = 20 + index % 500, 20 + index // 500
        document.update_object(
            xref, f"<</Type/Annot/Subtype/Text/Rect[{x} {y} {x + 9} {y + 9}]/Contents(n{index})>>"
        )
        notes.append(f"{xref} 0 R")
    document.xref_set_key(flood.xref, "Annots", "[" + " ".join(notes) + "]")
    markdown = PdfConverter().convert(document.tobytes()).markdown
    comments = markdown[markdown.index("# Comments") :]
    assert "- Ann Auditor, 2024-01-31, note: Check the totals" in comments
    assert "Drawn free text" not in comments and "highlight" not in comments
    assert comments.count("\n- ") == MAX_ANNOTATIONS


def test_a_list_item_without_a_hanging_indent_keeps_its_wrapped_line() -> None:
    """SPARSE's recommendations: an item that runs to the edge and wraps to a line
    starting where its number starts ("critical / items.") is one item, not an item
    and a paragraph cut mid-sentence."""
    markdown = convert("markitdown/test_files/SPARSE-2024-INV-1234_borderless_table.pdf").markdown
    assert "additional verification for critical items. 3. Schedule follow-up audit" in markdown
