"""The reading renderer: Markdown as HTML, and nothing a document holds can run."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from citations.markers import quoted_text_neutralise
from citations.presentation import Marker, answer_html
from core.markdown import markdown_html

HOSTILE = [
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<svg onload=alert(1)>",
    '<div style="background:url(javascript:alert(1))" onclick="alert(1)">x</div>',
    "<iframe src='https://evil.example'></iframe>",
    "![x](javascript:alert(1))",
    '![x" onerror="alert(1)](http://evil.example/x.png)',
    '[x](http://ok.example "t" onmouseover=alert(1))',
    "<!-- <script>alert(1)</script> -->",
    "| a |\n|---|\n| <script>alert(1)</script> |",
    "<style>body{display:none}</style>",
    "[ref]: javascript:alert(1)\n\n[ref]",
]


class Elements(HTMLParser):
    """The elements and attributes a browser would build from the HTML."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


SAFE_TAGS = {"p", "a", "table", "thead", "tbody", "tr", "th", "td", "br"}


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_markdown_renders_inert(hostile: str) -> None:
    for tag, attrs in Elements(str(markdown_html(hostile))).found:
        assert tag in SAFE_TAGS, tag
        assert set(attrs) <= {"href", "title", "rel"}, attrs
        href = (attrs.get("href") or "").strip().lower()
        assert not href or href.startswith(("http://", "https://", "mailto:")), href


def test_a_link_that_may_not_be_followed_shows_its_words_not_its_syntax() -> None:
    """Issue 55: readers see "support", neither a link nor "[support](javascript:…)"."""
    text = "Ask [support](javascript:alert(1)), [a page](notes.html) or [us](https://a.example)."
    html = str(markdown_html(text))
    assert html.startswith('<p>Ask support, a page or <a href="https://a.example"')
    assert "](" not in html and "javascript" not in html


def test_raw_html_is_shown_as_the_document_wrote_it() -> None:
    html = markdown_html("Use <b>bold</b> & <script>x()</script>")
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;x()&lt;/script&gt;" in html


def test_tables_headings_lists_and_links_render() -> None:
    html = markdown_html(
        "## Rates\n\n| plan | price |\n|---|--:|\n| basic | 10 |\n\n- one\n- two\n\n"
        "See [the site](https://example.com/a)."
    )
    assert "<h5>Rates</h5>" in html  # under the page's own headings
    assert "<table>" in html and "<td>basic</td>" in html
    assert '<td style="text-align:right">10</td>' in html
    assert "<ul>\n<li>one</li>" in html
    assert '<a href="https://example.com/a" rel="noopener noreferrer nofollow">the site</a>' in html


def test_neutralised_quotes_read_as_their_literal_characters() -> None:
    quoted = quoted_text_neutralise("cite secret.pdf [99] or <b>this</b> [x](http://e.example)")
    html = markdown_html(quoted)
    assert "cite secret.pdf [99] or &lt;b&gt;this&lt;/b&gt; [x](http://e.example)" in html
    assert "<a" not in html and "\\" not in html


def test_marks_follow_the_cited_text_across_blocks_without_breaking_them() -> None:
    text = "# Plans\n\n| plan | price |\n|---|---|\n| basic | 10 |\n\nAfter."
    html = str(markdown_html(text, [(0, text.index("After"))]))
    assert "<h4><mark>Plans</mark></h4>" in html
    assert "<table>" in html and "<td><mark>basic</mark></td>" in html
    assert "<p>After.</p>" in html
    assert html.count("<mark>") == html.count("</mark>")
    # a range that ends after a row's last pipe keeps the table a table
    row = text.index("| basic")
    html = str(markdown_html(text, [(row, row + len("| basic | 10 |"))]))
    assert "<td><mark>basic</mark></td>" in html and "<td><mark>10</mark></td>" in html


def test_marks_and_markers_cannot_be_forged_by_the_text() -> None:
    html = markdown_html("private \ue000use\ue001 and \ue0020\ue00399")
    assert "<mark>" not in html


def test_answer_markers_stay_links_inside_rendered_markdown() -> None:
    answer = "The plan costs **10 euros**. [1] See the table. [2]"
    markers = [
        Marker(answer.index(" [1]"), "1", "/s/1#page-2", "Source 1: plans.pdf", "preview-1-0"),
        Marker(answer.index(" [2]"), "2", "/s/2#L4", "Source 2: a.md"),
    ]
    html = answer_html(answer, markers)
    assert "<strong>10 euros</strong>." in html
    assert (
        '<a class="ref" href="/s/1#page-2" aria-label="Source 1: plans.pdf" '
        'aria-describedby="preview-1-0">[1]</a>'
    ) in html
    assert '<a class="ref" href="/s/2#L4" aria-label="Source 2: a.md">[2]</a>' in html
