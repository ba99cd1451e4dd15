"""DOCX footnotes, endnotes and reviewer comments: marked in their own sections,
each on the page of its reference, never mixed into the body text."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from documents.converters import ConversionError
from documents.converters.base import Conversion
from documents.converters.docx import DocxConverter
from tests.support.corpus import CORPUS

WORD = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
W15 = "http://schemas.microsoft.com/office/word/2012/wordml"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


def docx(body: str, parts: dict[str, str], relations: str = "") -> bytes:
    """A minimal DOCX: ``body`` inside ``<w:body>``, ``parts`` under ``word/`` and the
    main part's ``relations`` (``<Relationship>`` elements)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "_rels/.rels",
            f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
            f'Type="{TYPE}officeDocument" Target="word/document.xml"/></Relationships>',
        )
        archive.writestr(
            "word/document.xml",
            f'<w:document xmlns:w="{WORD}"><w:body>{body}</w:body></w:document>',
        )
        archive.writestr(
            "word/_rels/document.xml.rels",
            f'<Relationships xmlns="{RELS}">{relations}</Relationships>',
        )
        for name, xml in parts.items():
            archive.writestr(f"word/{name}", xml)
    return out.getvalue()


def relation(kind: str, target: str, rel_id: str, external: bool = False) -> str:
    mode = ' TargetMode="External"' if external else ""
    return f'<Relationship Id="{rel_id}" Type="{TYPE}{kind}" Target="{target}"{mode}/>'


def para(*runs: str) -> str:
    return f"<w:p>{''.join(runs)}</w:p>"


def text(value: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{value}</w:t></w:r>'


def notes(kind: str, bodies: dict[str, str]) -> str:
    separators = (
        f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
        f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r>'
        f"<w:continuationSeparator/></w:r></w:p></w:{kind}>"
    )
    entries = "".join(
        f'<w:{kind} w:id="{note_id}"><w:p><w:r><w:{kind}Ref/></w:r>{text(" " + value)}</w:p>'
        f"</w:{kind}>"
        for note_id, value in bodies.items()
    )
    return f'<w:{kind}s xmlns:w="{WORD}">{separators}{entries}</w:{kind}s>'


def lines_with_pages(result: Conversion) -> list[tuple[str, int | None]]:
    return list(zip(result.markdown.split("\n"), result.line_pages, strict=False))


def test_footnotes_and_endnotes_are_numbered_in_reading_order_on_their_reference_page() -> None:
    body = (
        para(text("Retention is set by the policy."))
        + para(
            '<w:r><w:br w:type="page"/></w:r>',
            text("Invoices are kept ten years"),
            '<w:r><w:footnoteReference w:id="7"/></w:r>',
            text(" in the archive"),
            '<w:r><w:endnoteReference w:id="2"/></w:r>',
            text("."),
        )
        + para(
            text("Contracts too"),
            '<w:r><w:footnoteReference w:id="3"/></w:r>',
            text(" and again"),
            '<w:r><w:footnoteReference w:id="7"/></w:r>',
        )
    )
    data = docx(
        body,
        {
            "footnotes.xml": notes("footnote", {"3": "Signed ones only.", "7": "Per § 147 AO."}),
            "endnotes.xml": notes("endnote", {"2": "See the archive handbook."}),
        },
        relation("footnotes", "footnotes.xml", "rId5")
        + relation("endnotes", "/word/endnotes.xml", "rId6"),
    )
    result = DocxConverter().convert(data)
    lines = lines_with_pages(result)
    assert ("Invoices are kept ten years[^1] in the archive[^e1].", 2) in lines
    assert ("Contracts too[^2] and again[^1]", 2) in lines
    footnotes = result.markdown.split("\n# Footnotes\n")[1].split("\n# Endnotes\n")
    assert footnotes[0].strip().split("\n") == ["[^1]: Per § 147 AO.", "[^2]: Signed ones only."]
    assert footnotes[1].strip() == "[^e1]: See the archive handbook."
    assert ("[^1]: Per § 147 AO.", 2) in lines and ("[^e1]: See the archive handbook.", 2) in lines
    assert "separator" not in result.markdown and result.markdown.count("[^2]:") == 1
    assert result.metadata["footnotes"] == 2 and result.metadata["endnotes"] == 1


def comments(entries: list[tuple[str, str, str, str]]) -> str:
    """``(id, author, paragraph id, text)`` comments."""
    body = "".join(
        f'<w:comment w:id="{cid}" w:author="{author}" w:date="2026-03-02T09:00:00Z">'
        f'<w:p w14:paraId="{pid}">{text(value)}</w:p></w:comment>'
        for cid, author, pid, value in entries
    )
    return f'<w:comments xmlns:w="{WORD}" xmlns:w14="{W14}">{body}</w:comments>'


def test_a_comment_quotes_its_anchor_spans_paragraphs_and_keeps_replies_under_it() -> None:
    body = (
        para(text("Intro on page one."))
        + '<w:commentRangeStart w:id="1"/>'
        + para('<w:r><w:br w:type="page"/></w:r>', text("The retention period"))
        + para(
            text("is ten years."),
            '<w:commentRangeEnd w:id="1"/>',
            '<w:r><w:commentReference w:id="1"/></w:r>',
            '<w:r><w:commentReference w:id="2"/></w:r>',
        )
    )
    threads = (
        f'<w15:commentsEx xmlns:w15="{W15}"><w15:commentEx w15:paraId="AA"/>'
        '<w15:commentEx w15:paraId="BB" w15:paraIdParent="AA"/></w15:commentsEx>'
    )
    data = docx(
        body,
        {
            "comments.xml": comments(
                [
                    ("1", "Ann Auditor", "AA", "Is this still right?"),
                    ("2", "Bo Legal", "BB", "Yes, per 2024 law."),
                ]
            ),
            "commentsExtended.xml": threads,
        },
        relation("comments", "comments.xml", "rId3")
        + '<Relationship Id="rId4" Type="http://schemas.microsoft.com/office/2011/relationships/'
        'commentsExtended" Target="commentsExtended.xml"/>',
    )
    result = DocxConverter().convert(data)
    lines = lines_with_pages(result)
    body_text, section = result.markdown.split("\n# Comments\n")
    assert "Is this still right?" not in body_text
    assert section.strip().split("\n") == [
        "- Ann Auditor, 2026-03-02T09:00:00Z, on “The retention period is ten years.”: "
        "Is this still right?",
        "  - Reply by Bo Legal, 2026-03-02T09:00:00Z: Yes, per 2024 law.",
    ]
    assert [page for line, page in lines if line.startswith(("- Ann", "  - Reply"))] == [2, 2]
    assert result.metadata["comments"] == 2


def test_a_long_anchor_is_cut_at_a_word_and_unreferenced_or_missing_notes_are_left_out() -> None:
    long_text = "word " * 5000
    body = para(
        '<w:commentRangeStart w:id="9"/>',
        text(long_text),
        '<w:commentRangeEnd w:id="9"/>',
        '<w:r><w:commentReference w:id="9"/></w:r>',
        '<w:r><w:commentReference w:id="404"/></w:r>',
    )
    data = docx(
        body,
        {
            "comments.xml": comments(
                [("9", "A", "01", "Too long."), ("5", "B", "02", "Never referenced.")]
            )
        },
        relation("comments", "comments.xml", "rId3"),
    )
    section = DocxConverter().convert(data).markdown.split("\n# Comments\n")[1].strip()
    assert section.startswith("- A, 2026-03-02T09:00:00Z, on “word word")
    assert section.endswith("word…”: Too long.")
    assert len(section) < 200 and "Never referenced" not in section


def test_a_notes_relationship_outside_the_package_or_external_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "comments.xml"
    secret.write_text(comments([("1", "X", "01", "outside the package")]))
    body = para(text("Body."), '<w:r><w:commentReference w:id="1"/></w:r>')
    for target in ("../../etc/passwd", "file://" + str(secret), str(secret)):
        for external in (False, True):
            data = docx(body, {}, relation("comments", target, "rId3", external=external))
            result = DocxConverter().convert(data)
            assert result.markdown == "Body.\n" and result.metadata["comments"] == 0


def test_a_notes_part_that_declares_entities_refuses_the_file() -> None:
    lol = (
        '<?xml version="1.0"?><!DOCTYPE c [<!ENTITY lol "lol">]>'
        f'<w:comments xmlns:w="{WORD}"><w:comment w:id="1"><w:p>{text("&lol;")}</w:p>'
        "</w:comment></w:comments>"
    )
    body = para(text("Body."), '<w:r><w:commentReference w:id="1"/></w:r>')
    data = docx(body, {"comments.xml": lol}, relation("comments", "comments.xml", "rId3"))
    with pytest.raises(ConversionError, match="DTD or XML entities"):
        DocxConverter().convert(data)


def test_corpus_comments_sit_on_their_anchor_s_page_in_a_section_of_their_own() -> None:
    result = DocxConverter().convert((CORPUS / "docling/docx/docx_comments.docx").read_bytes())
    body_text, section = result.markdown.split("\n# Comments\n")
    assert "reviewer comment" not in body_text
    assert section.strip().split("\n")[0] == (
        "- John Reviewer (JR), 2026-01-04T05:48:07Z, on “This is the first paragraph that has "
        "a comment attached to it.”: This is a sample reviewer comment on the first paragraph."
    )
    assert (
        "- unknown author, 2026-01-04T05:48:07Z, on “This paragraph has an anonymous comment.”"
        in section
    )
