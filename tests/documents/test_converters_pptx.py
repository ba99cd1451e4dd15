"""PPTX converter: slide sections, slide numbers per line, notes, tables, hostile decks."""

from __future__ import annotations

import io
import json
import re

import pytest

from documents.converters import ConversionError
from documents.converters.base import Conversion
from documents.converters.pptx import PptxConverter
from tests.support.corpus import CORPUS, nonempty
from tests.support.ground_truth import recall

PPTX = nonempty(
    sorted(
        p.relative_to(CORPUS).as_posix()
        for d in ("markitdown", "docling", "python-pptx")
        for p in (CORPUS / d).rglob("*.pptx")
    ),
    "corpus PPTX decks",
)


def convert(name: str) -> Conversion:
    return PptxConverter().convert((CORPUS / name).read_bytes())


def sections(result: Conversion) -> dict[int, list[str]]:
    """Lines under each '# Slide n' heading, keyed by n."""
    out: dict[int, list[str]] = {}
    current = 0
    for line in result.markdown.split("\n"):
        m = re.match(r"# Slide (\d+)(?: \(hidden\))?(: .*)?$", line)
        if m:
            current = int(m.group(1))
        out.setdefault(current, []).append(line)
    return out


@pytest.mark.parametrize("name", [*PPTX, "hostile/docling/powerpoint_malformed_pictures.pptx"])
def test_every_deck_converts_and_each_line_has_its_slide(name: str) -> None:
    result = convert(name)
    lines = result.markdown.split("\n")
    assert len(result.line_pages) == len(lines)
    slide = 0
    for line, page in zip(lines, result.line_pages, strict=True):
        m = re.match(r"# Slide (\d+)", line)
        if m:
            slide = int(m.group(1))
        if line.strip():
            assert page == slide, (line, page, slide)
    assert slide == result.page_count


def test_markitdown_vectors() -> None:
    vectors = json.loads((CORPUS / "markitdown/DERIVED_test_vectors.json").read_text("utf-8"))
    vector = next(v for v in vectors["GENERAL_TEST_VECTORS"] if v["filename"] == "test.pptx")
    md = convert("markitdown/test_files/test.pptx").markdown
    for s in nonempty(vector["must_include"], "strings test.pptx must include"):
        assert s in md, s
    for s in nonempty(vector["must_not_include"], "strings test.pptx must not include"):
        assert s not in md


def test_slide_titles_and_tables() -> None:
    result = convert("markitdown/test_files/test.pptx")
    heads = [ln for ln in result.markdown.split("\n") if ln.startswith("# ")]
    assert (
        heads[0]
        == "# Slide 1: AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation"
    )
    assert heads[2] == "# Slide 3: A table to test parsing:"
    table = sections(result)[3]
    assert "| ColA | ColB | ColC | ColD | ColE | ColF |" in table
    assert "| 7 | 8 | 9 | 1b92870d-e3b5-4e65-8153-919f4ff45592 | 11 | 12 |" in table


def test_speaker_notes_are_marked_and_belong_to_their_slide() -> None:
    result = convert("python-pptx/sld-notes.pptx")
    by_slide = sections(result)
    assert by_slide[1][0] == "# Slide 1"
    assert "### Notes" in by_slide[1] and "Notes" in by_slide[1]
    assert "### Notes" not in by_slide[2]
    assert result.metadata["slides_with_notes"] == 1


def test_external_hyperlink_text_kept_with_its_address() -> None:
    """The text is kept and the address written beside it as Markdown; the target
    is never fetched."""
    md = convert("python-pptx/ext-rels.pptx").markdown
    assert (
        "Code is available at [the python-pptx repository on GitHub]"
        "(https://github.com/scanny/python-pptx)" in md
    )
    comments = convert("docling/pptx/powerpoint_comments.pptx").markdown
    assert "as a [Python library](https://pypi.org/project/docling) with" in comments


def test_malformed_pictures_do_not_stop_conversion() -> None:
    md = convert("hostile/docling/powerpoint_malformed_pictures.pptx").markdown
    for s in (
        "Slide With Missing BlipFill",
        "Slide With Dangling Rel",
        "Slide With Wrong Content Type",
    ):
        assert s in md


def test_ground_truth_recall() -> None:
    pairs = [
        (f"docling/pptx/{p.name[:-3]}", p)
        for p in (CORPUS / "docling/pptx/groundtruth").glob("*.md")
    ]
    pairs.append(
        (
            "hostile/docling/powerpoint_malformed_pictures.pptx",
            CORPUS / "hostile/docling/powerpoint_malformed_pictures.pptx.md",
        )
    )
    scores = {n: recall(t.read_text("utf-8"), convert(n).markdown) for n, t in pairs}
    print("\n".join(f"{v:.3f} {k}" for k, v in sorted(scores.items())))
    assert scores["docling/pptx/powerpoint_with_image.pptx"] == 1.0
    assert scores["docling/pptx/powerpoint_bad_text.pptx"] == 1.0
    # docling labels comments "[author: …, time: …]"; those two words are all that is missing
    assert scores["docling/pptx/powerpoint_comments.pptx"] >= 0.94
    assert sum(scores.values()) / len(scores) >= 0.98


def test_line_breaks_inside_a_paragraph_read_as_spaces() -> None:
    lines = convert("docling/pptx/powerpoint_bad_text.pptx").markdown.split("\n")
    assert lines[0] == (
        "# Slide 1: X-Library The fully customisable and copyright-free standard content"
        " template collection exclusively for our customers"
    )


def test_reviewer_comments_are_marked_under_their_slide() -> None:
    result = convert("docling/pptx/powerpoint_comments.pptx")
    by_slide = sections(result)
    first = by_slide[1]
    assert first.index("### Comments") > first.index(
        "Docling converts messy documents into structured data and simplifies downstream"
        " document and AI processing by detecting tables, formulas, reading order, OCR,"
        " and much more."
    )
    assert "- John Reviewer (JR), 2026-01-01T00:00:00: This is a sample reviewer comment" in first
    # PowerPoint 2013 threading: the second comment answers the first
    assert "  - Reply by Jane Smith (JS), 2026-06-18T17:35:35.236: This is a sample response" in (
        first
    )
    assert "### Comments" not in by_slide[2]
    assert "- Jane Smith (JS), 2026-06-18T17:38:32.720: I need to try this out!" in by_slide[3]
    assert result.metadata["slides_with_comments"] == 2


def test_content_placeholders_keep_the_masters_bullets() -> None:
    by_slide = sections(convert("docling/pptx/powerpoint_comments.pptx"))
    items = [line for line in by_slide[3] if line.startswith("- ")]
    assert items[:3] == [
        "- Import many document formats into a unified and structured Docling Document ,"
        " including scanned pages via an OCR engine of your choice.",
        "- Export a parsed document to formats that simplify processing and ingestion into AI,"
        " RAG, and agentic systems.",
        "- Extract document components and their properties from the Docling Document.",
    ]
    assert not [line for line in by_slide[2] if line.startswith("- ")]  # a plain text box


MODERN = "http://schemas.microsoft.com/office/2018/10/relationships/"
P188 = "http://schemas.microsoft.com/office/powerpoint/2018/8/main"
DRAWING = "http://schemas.openxmlformats.org/drawingml/2006/main"


def deck_with_modern_comments(
    comments_xml: bytes,
    *,
    slides: int = 1,
    part_name: str = "/ppt/comments/modernComment_100_1.xml",
) -> bytes:
    """A new deck whose slides all point at one modern (threaded) comments part."""
    from pptx import Presentation
    from pptx.opc.package import Part
    from pptx.opc.packuri import PackURI
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    slide.shapes.title.text = "Budget 2027"
    for _ in range(slides - 1):
        prs.slides.add_slide(prs.slide_layouts[5]).shapes.title.text = "Appendix"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(2)).text_frame
    box.text = "Travel is capped at 4%."
    box.add_paragraph().text = "Hiring resumes in March."
    authors = (
        f'<p188:authorLst xmlns:p188="{P188}">'
        '<p188:author id="{1}" name="Ada Lovelace" initials="AL" userId="ada" providerId="None"/>'
        '<p188:author id="{2}" name="Alan Turing" initials="AT" userId="alan" providerId="None"/>'
        "</p188:authorLst>"
    ).encode()
    package = prs.part.package
    prs.part.relate_to(
        Part(
            PackURI("/ppt/authors.xml"),
            "application/vnd.ms-powerpoint.authors+xml",
            package,
            authors,
        ),
        MODERN + "authors",
    )
    comments = Part(
        PackURI(part_name), "application/vnd.ms-powerpoint.comments+xml", package, comments_xml
    )
    for each in prs.slides:
        each.part.relate_to(comments, MODERN + "comments")
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def test_modern_threaded_comments_and_their_replies() -> None:
    comments = (
        f'<p188:cmLst xmlns:p188="{P188}" xmlns:a="{DRAWING}">'
        '<p188:cm id="{C1}" authorId="{1}" created="2027-01-05T09:00:00.000">'
        "<p188:replyLst>"
        '<p188:reply id="{R1}" authorId="{2}" created="2027-01-05T10:30:00.000">'
        "<p188:txBody><a:bodyPr/><a:p><a:r><a:t>Agreed, 4% it is.</a:t></a:r></a:p>"
        "</p188:txBody></p188:reply></p188:replyLst>"
        "<p188:txBody><a:bodyPr/><a:p><a:r><a:t>Is 4% </a:t></a:r><a:r><a:t>enough?</a:t>"
        "</a:r></a:p></p188:txBody></p188:cm></p188:cmLst>"
    ).encode()
    result = PptxConverter().convert(deck_with_modern_comments(comments))
    lines = result.markdown.split("\n")
    assert lines[0] == "# Slide 1: Budget 2027"
    # two paragraphs of one text box stay two Markdown paragraphs
    body = lines.index("Travel is capped at 4%.")
    assert lines[body + 1 : body + 3] == ["", "Hiring resumes in March."]
    comment = lines.index("- Ada Lovelace (AL), 2027-01-05T09:00:00.000: Is 4% enough?")
    assert lines[comment - 2] == "### Comments"
    assert lines[comment + 1] == (
        "  - Reply by Alan Turing (AT), 2027-01-05T10:30:00.000: Agreed, 4% it is."
    )
    assert result.line_pages[comment] == 1


def test_unreadable_comments_part_keeps_the_slide() -> None:
    result = PptxConverter().convert(deck_with_modern_comments(b"<p188:cmLst><unclosed"))
    assert "### Comments" not in result.markdown
    assert "Hiring resumes in March." in result.markdown
    assert result.metadata["slides_with_comments"] == 0


def test_fuzzed_deck_fails_cleanly() -> None:
    with pytest.raises(ConversionError, match="corrupt file"):
        convert("hostile/poi/clusterfuzz-POIFuzzer-5205835528404992.pptx")


def test_a_comments_part_shared_by_many_slides_is_read_once() -> None:
    comments = (
        f'<p188:cmLst xmlns:p188="{P188}" xmlns:a="{DRAWING}">'
        '<p188:cm id="{C1}" authorId="{1}" created="2027-01-05T09:00:00.000">'
        "<p188:txBody><a:p><a:r><a:t>Check the totals</a:t></a:r></a:p></p188:txBody>"
        "</p188:cm></p188:cmLst>"
    ).encode()
    result = PptxConverter().convert(deck_with_modern_comments(comments, slides=300))
    assert result.markdown.count("Check the totals") == 1
    assert result.metadata["slides_with_comments"] == 1


def test_comment_fields_cannot_break_lines() -> None:
    """A newline in a date, a line break in the text and an unknown author id."""
    comments = (
        f'<p188:cmLst xmlns:p188="{P188}" xmlns:a="{DRAWING}">'
        '<p188:cm id="{C1}" authorId="{9}" created="2027&#10;01&#13;05\t09:00">'
        "<p188:txBody><a:p><a:r><a:t>first</a:t></a:r><a:br/><a:r><a:t>second</a:t></a:r>"
        "</a:p></p188:txBody></p188:cm></p188:cmLst>"
    ).encode()
    lines = PptxConverter().convert(deck_with_modern_comments(comments)).markdown.split("\n")
    assert "- unknown author, 2027 01 05 09:00: first second" in lines


def test_a_comments_part_declaring_entities_refuses_the_deck() -> None:
    """The part's name does not end in .xml, so only the converter can catch it."""
    comments = (
        '<?xml version="1.0"?><!DOCTYPE cmLst [<!ENTITY a "AAAA">]>'
        f'<p188:cmLst xmlns:p188="{P188}"><p188:cm authorId="{{1}}" created="&a;"/>'
        "</p188:cmLst>"
    ).encode()
    deck = deck_with_modern_comments(comments, part_name="/ppt/comments/modernComment_1.bin")
    with pytest.raises(ConversionError, match="declares a DTD or XML entities"):
        PptxConverter().convert(deck)


def test_a_placeholders_own_list_style_can_turn_bullets_off() -> None:
    from pptx import Presentation

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Plain"
    body = slide.placeholders[1]
    body.text_frame.text = "Not a list item"
    list_style = body.text_frame._txBody.find(f"{{{DRAWING}}}lstStyle")
    from lxml import etree

    level = etree.SubElement(list_style, f"{{{DRAWING}}}lvl1pPr")
    etree.SubElement(level, f"{{{DRAWING}}}buNone")
    out = io.BytesIO()
    prs.save(out)
    lines = PptxConverter().convert(out.getvalue()).markdown.split("\n")
    assert "Not a list item" in lines and "- Not a list item" not in lines
    slide.placeholders[1]._element.txBody.remove(list_style)  # the layout's bullets again
    out = io.BytesIO()
    prs.save(out)
    assert "- Not a list item" in PptxConverter().convert(out.getvalue()).markdown.split("\n")


def test_a_hidden_slide_is_converted_and_says_it_is_hidden() -> None:
    """A slide the show skips is still in the file and can be quoted: its heading
    says so, so an answer citing it does not pass it off as presented."""
    from pptx import Presentation

    deck = Presentation()
    for title in ("Budget", "Zebra budget"):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = title
    deck.slides[1].element.set("show", "0")
    out = io.BytesIO()
    deck.save(out)
    result = PptxConverter().convert(out.getvalue())
    headings = [line for line in result.markdown.split("\n") if line.startswith("# ")]
    assert headings == ["# Slide 1: Budget", "# Slide 2 (hidden): Zebra budget"]
    assert set(sections(result)) == {1, 2}
