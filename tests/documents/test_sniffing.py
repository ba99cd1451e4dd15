"""Kinds are decided by content; names may only refine text kinds."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from documents.sniffing import UnsupportedFile, sniff


def _zip(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("py-pdf-sample-files/001-trivial/minimal-document.pdf", "pdf"),
        ("markitdown/test_files/test.docx", "docx"),
        ("markitdown/test_files/test.pptx", "pptx"),
        ("markitdown/test_files/test.json", "json"),
        ("docling/md/duck.md", "markdown"),
    ],
)
def test_corpus_files_are_recognised_by_content(corpus: Path, path: str, kind: str) -> None:
    data = (corpus / path).read_bytes()
    full = str(corpus / path)  # a ZIP's directory is at its end: sniffing reads the file
    assert sniff(head=data[:8192], name=path.rsplit("/", 1)[-1], path=full).kind == kind
    if kind in {"pdf", "docx", "pptx"}:  # the content decides when the name gives no hint
        assert sniff(head=data[:8192], name="upload", path=full).kind == kind


def test_text_kinds_follow_the_extension_and_html_is_detected() -> None:
    assert sniff(head=b"plain words", name="a.txt").kind == "text"
    assert sniff(head=b"# Title", name="notes").kind == "markdown"
    assert sniff(head=b"# Title", name="README").kind == "markdown"  # no extension: fine
    assert sniff(head=b"a,b\n1,2\n", name="figures.csv").kind == "text"  # text by another name
    assert sniff(head=b'{"a": 1}', name="data").kind == "json"
    assert sniff(head=b"<!DOCTYPE html><html></html>", name="page.txt").kind == "html"


@pytest.mark.parametrize(
    ("head", "name", "message"),
    [
        (
            _zip({"mimetype": "application/epub+zip", "META-INF/container.xml": "<c/>"}),
            "book.pdf",
            "EPUB",
        ),
        (_zip({"xl/workbook.xml": "<w/>"}), "sheet.xlsx", "XLSX"),
        (_zip({"a.txt": "x"}), "a.zip", "ZIP archives"),
        (b"%PDF-1.7\n", "report.docx", "content is PDF but the name says DOCX"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image.png", "binary data"),
        (bytes(range(128, 256)) * 4, "blob.txt", "neither UTF-8 text"),
        (b"abc\x00def", "nul.txt", "binary data"),
        (b"# Looks like Markdown\n", "run.exe", r"\*\.exe are not accepted: a download would run"),
        (b"echo hi\n", "Install.Command", r"\*\.command are not accepted"),
        (b"%PDF-1.7\n", "invoice.pdf.js", r"\*\.js are not accepted"),
    ],
)
def test_unsupported_or_mismatched_content_is_refused(head: bytes, name: str, message: str) -> None:
    with pytest.raises(UnsupportedFile, match=message):
        sniff(head=head, name=name)
