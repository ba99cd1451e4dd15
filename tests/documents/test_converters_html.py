"""HTML converter: structure to Markdown, scripts and chrome dropped."""

from __future__ import annotations

import re

import pytest

from documents.converters import ConversionError
from documents.converters.html import HtmlConverter
from tests.support.corpus import CORPUS

PAGE = b"""<!doctype html><html><head><title>Policy</title><style>p{color:red}</style>
<script>var secret = "do-not-index";</script></head><body>
<nav><a href="/">Home</a> | <a href="/login">Log in</a></nav>
<h1>Travel policy</h1><p>Employees may book <b>economy</b> flights.
See the <a href="https://example.com/x">booking tool</a>.</p>
<h2>Hotels</h2><ul><li>Up to 150 EUR per night</li>
<li>Breakfast included<ul><li>only in Europe</li></ul></li></ul>
<ol><li>Book</li><li>Approve</li></ol>
<table><tr><th>City</th><th>Limit</th></tr><tr><td>Paris</td><td>200 | EUR</td></tr></table>
<h3>Notes</h3><div>Line one<br>line two</div><!-- hidden comment -->
</body></html>"""


def test_structure() -> None:
    result = HtmlConverter().convert(PAGE)
    md = result.markdown
    lines = md.split("\n")
    assert "# Travel policy" in lines and "## Hotels" in lines and "### Notes" in lines
    assert "Employees may book economy flights. See the booking tool." in md
    assert "- Up to 150 EUR per night" in lines and "  - only in Europe" in lines
    assert "1. Book" in lines and "2. Approve" in lines
    assert "| City | Limit |" in lines and "| Paris | 200 \\| EUR |" in lines
    assert "Line one\nline two\n" in md  # a <br> starts a new line
    for hidden in ("do-not-index", "color:red", "Log in", "hidden comment", "https://example.com"):
        assert hidden not in md
    assert result.line_pages == [] and result.metadata["title"] == "Policy"
    for line in lines:
        if line.startswith("#"):
            assert re.fullmatch(r"#{1,6} \S.*", line)


def test_corpus_html_source_text() -> None:
    md = (
        HtmlConverter()
        .convert((CORPUS / "py-pdf-sample-files/015-arabic/habibi.html").read_bytes())
        .markdown
    )
    assert md.strip() == "حَبيبي habibi"


def test_markdown_looking_text_is_escaped() -> None:
    md = HtmlConverter().convert(b"<p># not a heading</p><p>- not a list</p>").markdown
    assert not re.search(r"^#", md, re.M)
    assert "\\# not a heading" in md


def test_empty_page_is_an_error() -> None:
    with pytest.raises(ConversionError, match="no readable text"):
        HtmlConverter().convert(b"<html><script>x()</script></html>")


def test_line_breaks_and_preformatted_text_keep_their_lines() -> None:
    """A <br> read as a space ran an address into one line, and a <pre> block lost
    its lines and indentation."""
    page = (
        "<html><body><address>Acme GmbH<br>Hauptstraße 1<br/>10115 Berlin</address>"
        "<p>Before the code.</p>"
        "<pre>\ndef retention(years):\n    return  years * 365\n\n```inside```\n</pre>"
        "<pre>\n\n</pre><p>After it.</p></body></html>"
    ).encode()
    markdown = HtmlConverter().convert(page).markdown
    assert "Acme GmbH\nHauptstraße 1\n10115 Berlin\n" in markdown
    assert (
        "Before the code.\n\n````\ndef retention(years):\n    return  years * 365\n\n"
        "```inside```\n````\n\nAfter it.\n"
    ) in markdown
