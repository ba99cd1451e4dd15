"""DOCX converter: headings, lists, tables, page numbers from page breaks, hostile files."""

from __future__ import annotations

import io
import json
import re
import zipfile
from html import escape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from documents.converters import ConversionError
from documents.converters.base import Conversion
from documents.converters.docx import DocxConverter
from documents.markdown_structure import MarkdownStructure
from tests.support.corpus import CORPUS, corpus_files, nonempty
from tests.support.ground_truth import recall

DOCX = nonempty(
    sorted(
        p.relative_to(CORPUS).as_posix()
        for d in ("markitdown", "docling", "python-docx")
        for p in (CORPUS / d).rglob("*.docx")
    ),
    "corpus DOCX files",
)


def convert(name: str) -> Conversion:
    return DocxConverter().convert((CORPUS / name).read_bytes())


def line_of(result: Conversion, text: str) -> int:
    """Page of the (single) Markdown line containing ``text``."""
    lines = result.markdown.split("\n")
    hits = [i for i, ln in enumerate(lines) if text in ln]
    assert len(hits) == 1, (text, hits)
    page = result.line_pages[hits[0]]
    assert page is not None, text
    return page


@pytest.mark.parametrize("name", DOCX)
def test_every_corpus_docx_converts_with_one_page_per_line(name: str) -> None:
    result = convert(name)
    assert result.markdown.strip()
    assert len(result.line_pages) == len(result.markdown.split("\n"))
    page_count = result.page_count
    assert page_count is not None
    assert all(p is not None and 1 <= p <= page_count for p in result.line_pages)
    for line in result.markdown.split("\n"):
        if line.startswith("#"):
            assert re.fullmatch(r"#{1,6} \S.*", line)


def test_markitdown_vectors() -> None:
    vectors = json.loads((CORPUS / "markitdown/DERIVED_test_vectors.json").read_text("utf-8"))
    vector = next(v for v in vectors["GENERAL_TEST_VECTORS"] if v["filename"] == "test.docx")
    md = convert("markitdown/test_files/test.docx").markdown
    for s in nonempty(vector["must_include"], "strings test.docx must include"):
        if s.startswith("data:image"):
            continue  # markitdown's inline-image placeholder; we emit no image data at all
        assert s in md, s
    for s in nonempty(vector["must_not_include"], "strings test.docx must not include"):
        assert s not in md
    assert "base64" not in md


def test_rendered_page_breaks_split_paragraphs_between_pages() -> None:
    """python-docx features/steps/pagebreak.py: '>>' ends a page, '<<' starts the next."""
    result = convert("python-docx/par-rendered-page-breaks.docx")
    assert result.metadata["page_breaks_from"] == "rendered"
    assert line_of(result, "No page breaks") == 1
    assert line_of(result, "Page break here>>") == 1
    assert line_of(result, "<<followed by more text.") == 2
    assert line_of(result, "Page break in>>") == 2
    assert line_of(result, "<<this hyperlink](http://google.com/) and another one here>>") == 3
    assert line_of(result, "<<with text following") == 4
    assert line_of(result, "Two page>>") == 4
    assert line_of(result, "<<breaks>>") == 5
    assert line_of(result, "<<in one run.") == 6
    assert result.page_count == 6


def test_headings_follow_styles() -> None:
    md = convert("docling/docx/unit_test_headers.docx").markdown
    lines = md.split("\n")
    assert "# Test Document" in lines  # the Title; Heading n sits one level below it
    assert "## Section 1" in lines and "### Section 1.1" in lines
    assert "#### Section 1.2.3" in lines


def test_tables_and_block_order() -> None:
    md = convert("docling/docx/word_tables.docx").markdown
    assert "| Header 0.0 | Header 0.1 | Header 0.2 |" in md
    assert "| Cell 1.0 | Cell 1.1 | Cell 1.2 |" in md
    # a merged cell's text fills each grid cell it covers, so every row reads whole
    assert "| Cell 1.0 | Merged Cell 1.1 1.2 | Merged Cell 1.1 1.2 |" in md  # gridSpan
    assert "| Cell 2.0 | Merged Cell 1.1 2.1 | Cell 2.2 |" in md  # vMerge continues downwards
    assert "| Cell 4.0 | Merged Cell 3.1 4.1 | Cell 4.2 |" in md
    assert "|  | Cell 1.1 |" in md  # gridBefore: the row starts in the second column
    assert "|  |  | Merged Cell 0.2 1.2 |" in md  # a vertical span over a late row
    order = convert("python-docx/blk-paras-and-tables.docx").markdown
    blocks = [b for b in order.split("\n\n") if b.strip()]
    kinds = ["table" if b.startswith("|") else "para" for b in blocks]
    # python-docx expects [Table, Paragraph, Table, Paragraph, Table, Paragraph]; the last
    # paragraph is empty, and empty paragraphs produce no Markdown
    assert kinds == ["table", "para", "table", "para", "table"]


def test_lists_are_markdown_list_items() -> None:
    md = convert("docling/docx/textbox.docx").markdown
    assert any(ln.startswith("- ") for ln in md.split("\n"))
    assert "Student falls ill" in md  # text-box content is included


def test_comments_are_marked_in_their_own_section_not_in_the_body() -> None:
    """The MANIFEST's comment strings are in the Markdown, but only under ``# Comments``."""
    md = convert("markitdown/test_files/test_with_comment.docx").markdown
    body, comments = md.split("\n# Comments\n")
    for text in (
        "This is a test comment. 12df-321a",
        "Yet another comment in the doc. 55yiyi-asd09",
    ):
        assert text not in body and "- Unknown Author, 2024-12-15T" in comments
        assert text in comments
    assert "314b0a30-5b04-470b-b9f7-eed2c2bec74a" in body
    rich = convert("python-docx/comments-rich-para.docx").markdown
    body, comments = rich.split("\n# Comments\n")
    assert "Some text worthy of note." in body and "google.com" not in body
    assert (
        "- Steve Canny (SJC), 2025-06-07T11:20:00Z, on “Some text worthy of note.”: "
        "Text with hyperlink https://google.com embedded."
    ) in comments.split("\n")


def test_ground_truth_recall() -> None:
    pairs = [
        (f"docling/docx/{p.name[:-3]}", p)
        for p in (CORPUS / "docling/docx/groundtruth").glob("*.md")
    ]
    scores = {n: recall(t.read_text("utf-8"), convert(n).markdown) for n, t in pairs}
    print("\n".join(f"{v:.3f} {k}" for k, v in sorted(scores.items())))
    assert len(scores) == 7
    assert scores["docling/docx/word_tables.docx"] == 1.0
    assert min(scores.values()) >= 0.99  # textbox.docx 0.993
    assert sum(scores.values()) / len(scores) >= 0.995


def test_strict_ooxml_converts() -> None:
    assert "Some text" in convert("docling/docx/Strict.docx").markdown


def test_external_entity_docx_is_refused_without_fetching() -> None:
    with pytest.raises(ConversionError, match="DTD or XML entities"):
        convert("hostile/poi/ExternalEntityInText.docx")


def test_external_image_relationship_is_never_read(tmp_path: Path) -> None:
    secret = Path("/tmp/test_rlink.txt")
    existed = secret.exists()
    if not existed:
        secret.write_text("de658225-569e-4e3d-9ed2-cfb6abf927fc")
    try:
        md = convert("hostile/markitdown/rlink.docx").markdown
    finally:
        if not existed:
            secret.unlink()
    assert "de658225" not in md and "ZGU2NTgyMjUtNTY5ZS00ZTNkLTllZDItY2ZiNmFiZjk" not in md
    assert "Testing Linked Images" in md


def test_truncated_docx_is_a_clean_error() -> None:
    with pytest.raises(ConversionError, match="corrupt file"):
        convert("hostile/poi/truncated62886.docx")


def test_docx_zip_bomb_is_refused_before_parsing() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b"<w:document/>" + b" " * (100 * 1024 * 1024))
    data = buffer.getvalue()
    assert len(data) < 1024 * 1024
    with pytest.raises(ConversionError, match=r"expands \d+x .*zip bomb"):
        DocxConverter().convert(data)


def test_billion_laughs_part_is_refused() -> None:
    lol = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        "<w:document><w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("word/document.xml", lol)
    with pytest.raises(ConversionError, match="declares a DTD or XML entities"):
        DocxConverter().convert(buffer.getvalue())


WORD = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_with_table(rows: str) -> bytes:
    """A minimal DOCX whose body is one table of ``rows`` (``<w:tr>`` elements)."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
            '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        archive.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{WORD}"><w:body><w:tbl>{rows}</w:tbl></w:body></w:document>',
        )
    return out.getvalue()


def convert_bytes(data: bytes) -> str:
    from documents.converters.docx import DocxConverter

    return DocxConverter().convert(data).markdown


def cell(text: str = "", *, span: int = 0, merge: str | None = None) -> str:
    props = (f'<w:gridSpan w:val="{span}"/>' if span else "") + (
        "" if merge is None else (f'<w:vMerge w:val="{merge}"/>' if merge else "<w:vMerge/>")
    )
    return f"<w:tc><w:tcPr>{props}</w:tcPr><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:tc>"


def row(*cells: str, props: str = "") -> str:
    return f"<w:tr><w:trPr>{props}</w:trPr>{''.join(cells)}</w:tr>"


def test_merged_cell_copies_are_bounded_per_table() -> None:
    """A 20,000-character cell spanning 63 columns over 2,000 continuation rows would
    be 2.5 GB of copies; the copies stop at the table's budget."""
    from documents.converters.docx import MERGED_COPY_BUDGET

    rows = row(cell("W" * 20_000, span=63, merge="restart")) + row(cell(span=63, merge="")) * 2000
    data = docx_with_table(rows)
    markdown = convert_bytes(data)
    assert markdown.count("W" * 20_000) == 1 + MERGED_COPY_BUDGET // 20_000
    assert len(markdown) < 1_000_000


def test_merges_across_content_controls_and_short_rows() -> None:
    wrapped = "<w:sdt><w:sdtContent>" + cell(merge="") + "</w:sdtContent></w:sdt>"
    markdown = convert_bytes(
        docx_with_table(
            row(cell("H0"), cell("R", merge="restart"), cell("H2"))
            + row(cell("a"), wrapped, cell("c"))
            + row(cell("short"))  # ends the vertical merge of the second column
            + row(cell("x"), cell(merge=""), cell("z"))
        )
    )
    lines = markdown.split("\n")
    assert "| a | R | c |" in lines  # the continuation inside w:sdt
    assert "| x |  | z |" in lines  # nothing continues across the short row


def _heading_paths(entries: list[tuple[int, str]]) -> dict[str, list[str]]:
    """Each heading's path of enclosing headings, from (level, text) in document order."""
    stack: list[tuple[int, str]] = []
    paths = {}
    for level, text in entries:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        paths[text] = [t for _, t in stack]
    return paths


@pytest.mark.parametrize(
    "name",
    [
        name.rsplit("/", 1)[-1][: -len(".itxt")]
        for name in corpus_files("*.itxt", under="docling/docx/groundtruth", recursive=False)
    ],
)
def test_heading_paths_match_docling_s_item_tree(name: str) -> None:
    """docling's ground-truth item tree nests every section header (a Title's too):
    our Markdown headings give each of them the same path, so a citation's section
    names the same chain of headings."""
    tree = (CORPUS / "docling/docx/groundtruth" / f"{name}.itxt").read_text("utf-8")
    expected = _heading_paths(
        [
            (len(m.group(1)), m.group(2).strip())
            for m in re.finditer(
                r"^( *)item-\d+ at level \d+: (?:title|section_header): (.+)$", tree, re.M
            )
        ]
    )
    markdown = convert(f"docling/docx/{name}").markdown
    ours = _heading_paths(
        [
            (len(m.group(1)), m.group(2).strip())
            for m in re.finditer(r"^(#{1,6}) (.+)$", markdown, re.M)
        ]
    )
    assert {text: ours.get(text) for text in expected} == expected


def test_equations_keep_their_layout_as_marks_between_dollars() -> None:
    """markitdown's equations.docx (its test wants ``$m=1$`` and a ``$$`` block):
    the exponent of 10 stays an exponent and a fraction stays a fraction, instead
    of "10-6" (ten minus six) and "mλa"."""
    markdown = convert("markitdown/test_files/equations.docx").markdown
    assert "For $m=1$," in markdown
    assert "$$sin⁡θ=mλ/a=((1)(550×10^{-6} mm))/(2.5 mm)=2.2×10^{-4}$$" in markdown
    assert "$θ=sin^{-1}⁡(2.2×10^{-4})=2.2×10^{-4}rad$" in markdown
    assert "10-6" not in markdown


_MATH = "http://schemas.openxmlformats.org/officeDocument/2006/math"


@pytest.mark.parametrize(
    ("xml", "text"),
    [
        ("<m:sSub><m:e><m:r><m:t>x</m:t></m:r></m:e><m:sub><m:r><m:t>ij</m:t></m:r></m:sub>"
         "</m:sSub>", "x_{ij}"),
        ("<m:sSubSup><m:e><m:r><m:t>a</m:t></m:r></m:e><m:sub><m:r><m:t>0</m:t></m:r></m:sub>"
         "<m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSubSup>", "a_0^2"),
        ("<m:rad><m:deg><m:r><m:t>3</m:t></m:r></m:deg><m:e><m:r><m:t>x+1</m:t></m:r></m:e>"
         "</m:rad>", "^3√(x+1)"),
        ("<m:nary><m:naryPr><m:chr m:val=\"∑\"/></m:naryPr><m:sub><m:r><m:t>i=1</m:t></m:r>"
         "</m:sub><m:sup><m:r><m:t>n</m:t></m:r></m:sup><m:e><m:r><m:t>i</m:t></m:r></m:e>"
         "</m:nary>", "∑_{i=1}^n i"),
        ("<m:d><m:dPr><m:begChr m:val=\"[\"/><m:endChr m:val=\"]\"/><m:sepChr m:val=\";\"/>"
         "</m:dPr><m:e><m:r><m:t>a</m:t></m:r></m:e><m:e><m:r><m:t>b</m:t></m:r></m:e></m:d>",
         "[a;b]"),
        ("<m:f><m:num><m:r><m:t>a+b</m:t></m:r></m:num><m:den><m:f><m:num><m:r><m:t>1</m:t>"
         "</m:r></m:num><m:den><m:r><m:t>c</m:t></m:r></m:den></m:f></m:den></m:f>",
         "(a+b)/(1/c)"),
    ],
)  # fmt: skip
def test_each_equation_structure_has_its_mark(xml: str, text: str) -> None:
    from lxml import etree

    from documents.converters._omml import equation_markdown

    element = etree.fromstring(f'<m:oMath xmlns:m="{_MATH}">{xml}</m:oMath>')
    assert equation_markdown(element) == f"${text}$"


def _docx_parts(document: str, numbering: str, styles: str) -> bytes:
    """A minimal DOCX of a body, numbering definitions and styles (``w:`` elements)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
            '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        for name, xml in (("document", f"<w:body>{document}</w:body>"), ("numbering", numbering),
                          ("styles", styles)):  # fmt: skip
            root = {"document": "document", "numbering": "numbering", "styles": "styles"}[name]
            archive.writestr(f"word/{name}.xml", f'<w:{root} xmlns:w="{WORD}">{xml}</w:{root}>')
    return out.getvalue()


def _level(ilvl: int, fmt: str, text: str, start: int = 1) -> str:
    return (
        f'<w:lvl w:ilvl="{ilvl}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/>'
        f'<w:lvlText w:val="{text}"/></w:lvl>'
    )


def _item(text: str, num: int | None = None, ilvl: int = 0, style: str = "") -> str:
    props = f'<w:pStyle w:val="{style}"/>' if style else ""
    if num is not None:
        props += f'<w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num}"/></w:numPr>'
    return f"<w:p><w:pPr>{props}</w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"


def test_list_items_carry_the_numbers_word_shows() -> None:
    """Clauses and steps are cited by their numbers: each level's format and text
    from numbering.xml, counted in document order, restarted below a higher level,
    continued by another list of the same definition, restarted by a startOverride;
    a numbered heading style gives the heading its number; numId 0 numbers nothing."""
    numbering = (
        '<w:abstractNum w:abstractNumId="1">'
        + _level(0, "decimal", "%1.") + _level(1, "lowerLetter", "%2)")
        + _level(2, "lowerRoman", "(%3)") + "</w:abstractNum>"
        + '<w:abstractNum w:abstractNumId="2">'
        + _level(0, "decimal", "%1") + _level(1, "decimal", "%1.%2") + "</w:abstractNum>"
        + '<w:abstractNum w:abstractNumId="3">' + _level(0, "bullet", "\uf0b7")
        + "</w:abstractNum>"
        + '<w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num>'
        + '<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>'
        + '<w:num w:numId="3"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0">'
        '<w:startOverride w:val="5"/></w:lvlOverride></w:num>'
        + '<w:num w:numId="4"><w:abstractNumId w:val="2"/></w:num>'
        + '<w:num w:numId="5"><w:abstractNumId w:val="3"/></w:num>'
    )  # fmt: skip
    styles = (
        '<w:style w:styleId="Heading2"><w:name w:val="heading 2"/><w:pPr><w:numPr>'
        '<w:ilvl w:val="1"/><w:numId w:val="4"/></w:numPr></w:pPr></w:style>'
        '<w:style w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:numPr>'
        '<w:numId w:val="4"/></w:numPr></w:pPr></w:style>'
    )
    body = "".join(
        [
            _item("Scope", style="Heading1"),
            _item("Purpose", style="Heading2"),
            _item("Keep records", 1),
            _item("for seven years", 1, 1),
            _item("in the archive", 1, 1),
            _item("sealed", 1, 2),
            _item("Report breaches", 2),  # another list of the same definition: continues
            _item("within a day", 2, 1),  # a level restarts below a higher one
            _item("Appeals", 3),  # restarted at 5
            _item("Not numbered", 0),
            _item("A point", 5),
            _item("Terms", style="Heading2"),
        ]
    )
    markdown = DocxConverter().convert(_docx_parts(body, numbering, styles)).markdown
    lines = [line for line in markdown.split("\n") if line]
    assert lines == [
        "# 1 Scope",
        "## 1.1 Purpose",
        "1. Keep records",
        "  a) for seven years",
        "  b) in the archive",
        "    (i) sealed",
        "2. Report breaches",
        "  a) within a day",
        "5. Appeals",
        "Not numbered",
        "- A point",
        "## 1.2 Terms",
    ]


def test_hyperlinks_keep_their_addresses() -> None:
    """python-docx's hyperlink sample (its feature test expects http://yahoo.com/
    for 'awesome hyperlink'): external links become Markdown links; a link whose
    text crosses one of Word's rendered page breaks is one link over the two lines
    (each on its own page), as CommonMark reads a paragraph's lines."""
    result = convert("python-docx/par-hyperlinks.docx")
    markdown = result.markdown
    assert "One [awesome hyperlink](http://yahoo.com/)." in markdown
    assert "the [second one](http://python.org/), and the [third](http://yahoo.com/)." in markdown
    assert "Three hyperlinks: [the first\none](http://google.com/) here, the" in markdown
    assert line_of(result, "Three hyperlinks: [the first") + 1 == line_of(result, "one](http")
    paragraph = MarkdownIt("commonmark").render("Three hyperlinks: [the first\none](http://g.co/)")
    assert '<a href="http://g.co/">the first\none</a>' in paragraph


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("javascript:alert(1)", "click"),  # never a link that runs code
        ("file:///etc/passwd", "click"),
        ("https://example.com/a b(c)", "[click](https://example.com/a%20b%28c%29)"),
        ("mailto:audit@example.com", "[click](mailto:audit@example.com)"),
    ],
)
def test_only_web_and_mail_links_are_written_and_their_addresses_are_safe(
    target: str, expected: str
) -> None:
    result = DocxConverter().convert(_linked("<w:r><w:t>click</w:t></w:r>", target))
    assert result.markdown.strip() == expected


def _linked(runs: str, target: str, before: str = "", after: str = "") -> bytes:
    """A DOCX of one paragraph: ``before``, a hyperlink to ``target`` around
    ``runs``, ``after`` (runs of ``w:`` elements)."""
    rels = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        f'relationships/hyperlink" Target="{target}" TargetMode="External"/></Relationships>'
    )
    body = (
        f'<w:p>{before}<w:hyperlink xmlns:r="http://schemas.openxmlformats.org/officeDocument/'
        f'2006/relationships" r:id="rId9">{runs}</w:hyperlink>{after}</w:p>'
    )
    data = _docx_parts(body, "", "")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            archive.writestr(info, source.read(info))
        archive.writestr("word/_rels/document.xml.rels", rels)
    return out.getvalue()


BREAK = "<w:r><w:lastRenderedPageBreak/></w:r>"


@pytest.mark.parametrize(
    ("runs", "target", "lines"),
    [
        pytest.param(  # a break inside the link's text: one link over two lines
            f"<w:r><w:t>the [first]</w:t></w:r>{BREAK}<w:r><w:t>one</w:t></w:r>",
            "https://example.com/",
            ["See [the \\[first\\]", "one](https://example.com/) here."],
            id="split",
        ),
        pytest.param(  # two breaks: the middle page holds only part of the text
            f"<w:r><w:t>a</w:t></w:r>{BREAK}<w:r><w:t>b</w:t></w:r>{BREAK}<w:r><w:t>c</w:t></w:r>",
            "https://example.com/",
            ["See [a", "b", "c](https://example.com/) here."],
            id="three-pages",
        ),
        pytest.param(  # the break before any of its text: the link is on the next page
            f"{BREAK}<w:r><w:t>late</w:t></w:r>",
            "https://example.com/",
            ["See", "[late](https://example.com/) here."],
            id="break-first",
        ),
        pytest.param(  # never a link that runs code, split or not
            f"<w:r><w:t>the first</w:t></w:r>{BREAK}<w:r><w:t>one</w:t></w:r>",
            "javascript:alert(1)",
            ["See the first", "one here."],
            id="script",
        ),
    ],
)
def test_a_link_across_a_page_break_is_one_link_over_its_lines(
    runs: str, target: str, lines: list[str]
) -> None:
    before, after = (
        '<w:r><w:t xml:space="preserve">See </w:t></w:r>',
        '<w:r><w:t xml:space="preserve"> here.</w:t></w:r>',
    )
    result = DocxConverter().convert(_linked(runs, target, before, after))
    assert result.markdown.strip().split("\n") == lines
    assert result.line_pages[: len(lines)] == list(range(1, len(lines) + 1))


def test_a_line_break_inside_a_paragraph_starts_a_line_of_its_own() -> None:
    """docling's textbox sample lists symptoms one per line with ``w:br``: each is
    a Markdown line of the same paragraph (no blank line between), not one run-on line."""
    lines = convert("docling/docx/textbox.docx").markdown.split("\n")
    start = lines.index("- Suggested Reportable Symptoms:")
    assert lines[start + 1 : start + 4] == ["＊ Fever", "＊ Cough", "＊ Diarrhea"]
    assert lines[start + 8] == "＊ Sore throat" and lines[start + 9] == ""
    body = (
        "<w:p><w:r><w:t>First line</w:t><w:br/><w:t>second line</w:t><w:cr/>"
        '<w:t>third</w:t><w:br w:type="page"/><w:t>next page</w:t></w:r></w:p>'
    )
    result = DocxConverter().convert(_docx_parts(body, "", ""))
    assert result.markdown.strip().split("\n") == [
        "First line", "second line", "third", "next page"
    ]  # fmt: skip
    assert result.line_pages[:4] == [1, 1, 1, 2]


def test_a_picture_s_description_is_an_image_markdown_reads() -> None:
    """markitdown's test.docx names its picture "图片 1": a destination with a space
    would leave the line as text, so the name keeps its word characters only."""
    markdown = convert("markitdown/test_files/test.docx").markdown
    assert "![图形用户界面, 文本, 应用程序, 信件 AI 生成的内容可能不正确。](图片1)" in markdown
    rendered = MarkdownIt("commonmark").render(markdown)
    assert '<img src="%E5%9B%BE%E7%89%871" alt="图形用户界面' in rendered
    picture = '<wp:docPr xmlns:wp="urn:wp" name="Chart (main) 2" descr="a [b] c"/>'
    body = f"<w:p><w:r><w:drawing>{picture}</w:drawing></w:r></w:p>"
    assert DocxConverter().convert(_docx_parts(body, "", "")).markdown.strip() == (
        "![a \\[b\\] c](Chartmain2)"
    )


@pytest.mark.parametrize("opener", ["```", "~~~", "<!-- draft", "<div>"])
def test_a_line_that_would_open_a_code_fence_or_html_block_is_text(opener: str) -> None:
    """After a line break, a line starting with a fence or an HTML opener would make
    Markdown swallow the document after it, headings too (each chunk's section)."""
    styles = '<w:style w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'
    body = (
        f"<w:p><w:r><w:t>Before</w:t><w:br/><w:t>{escape(opener)}</w:t></w:r></w:p>"
        '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>After</w:t></w:r></w:p>'
        "<w:p><w:r><w:t>Text under the heading.</w:t></w:r></w:p>"
    )
    markdown = DocxConverter().convert(_docx_parts(body, "", styles)).markdown
    assert f"\\{opener}" in markdown.split("\n")
    structure = MarkdownStructure(markdown)
    assert [(h.level, h.text) for h in structure.headings] == [(1, "After")]
    assert {b.kind for b in structure.blocks} <= {"paragraph", "heading"}
