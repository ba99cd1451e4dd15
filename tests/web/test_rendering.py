"""What readers see of stored Markdown: escapes dropped where people read, kept
where the Markdown itself is shown."""

from __future__ import annotations

from citations.presentation import Marker, answer_html
from citations.web.rendering import marked, readable


def test_reading_drops_markdown_backslash_escapes_only() -> None:
    stored = r"Set different\_first\_page, then 1\. press \# and \*; C:\temp\new stays."
    assert (
        readable(stored) == r"Set different_first_page, then 1. press # and *; C:\temp\new stays."
    )
    assert readable(r"a \\ b") == "a \\ b"  # an escaped backslash is one backslash
    # the converters' guard against a body line read as a list item
    assert readable("Totals\n\\1. April\n  \\2) May") == "Totals\n1. April\n  2) May"
    assert readable(r"see \1. here") == r"see \1. here"  # only at a line's start


def test_passages_for_reading_keep_their_marks_on_the_same_words() -> None:
    stored = r"Intro. The flag different\_first\_page is set. Outro."
    start = stored.index("The")
    end = stored.index(" Outro")
    html = marked(stored, [(start, end)], for_reading=True)
    assert "<mark>The flag different_first_page is set.</mark>" in html
    assert "\\" not in html
    raw = marked(stored, [(start, end)])  # the viewer's Markdown lines: as stored
    assert r"different\_first\_page" in raw


def test_answers_read_without_escapes_and_keep_their_links() -> None:
    answer = r"It uses different\_first\_page [1]."
    at = answer.index(" [1]")
    html = answer_html(answer, [Marker(at=at, quoted_as="1", href="/s/1", label="source 1")])
    assert "different_first_page" in html and "\\" not in html
    assert '<a class="ref" href="/s/1" aria-label="source 1">[1]</a>' in html
    assert "&lt;" in answer_html("a <b> [1]", [])  # still HTML-escaped


def test_code_keeps_its_backslashes() -> None:
    stored = 'Run `grep "\\." f` then:\n\n```\nprintf("\\\\n");\n\\1. not a list\n```\nDone\\.'
    shown = readable(stored)
    assert '`grep "\\." f`' in shown
    assert 'printf("\\\\n");\n\\1. not a list' in shown
    assert shown.endswith("Done.")


def test_an_escape_cut_by_a_mark_or_a_mid_line_piece_reads_the_same() -> None:
    stored = r"Total \_net\_ value: 1\. see \1. here"
    at = stored.index("_net")  # a mark starting between the backslash and its character
    html = marked(stored, [(at, len(stored))], for_reading=True)
    assert html == "Total <mark>_net_ value: 1. see \\1. here</mark>"


def test_strong_emphasis_reads_without_its_asterisks() -> None:
    """JSON keys are written "**key**: value" and Markdown uploads write bold: readers
    see the words, the viewer's Markdown keeps the syntax, and literal asterisks stay."""
    assert readable("- **name**: Contoso\n- **vin**: 1C4RJ") == "- name: Contoso\n- vin: 1C4RJ"
    assert readable("**Net** and **gross total**") == "Net and gross total"
    # asterisks that are the document's own text stay, as quoted
    for literal in (
        "5 ** 3 = 125",
        "** loose",
        "**x **",
        "***x***",
        "max is 2**31-1 and min -2**31",
        "def f(*args, **kwargs): return g(**kwargs)",
        "p: 0.45**, 0.32**",
        "- **a**b**: 1",
    ):
        assert readable(literal) == literal, literal
    assert readable(r"\*\*kept\*\*") == "**kept**"
    assert readable("- **formula**: a**2 + b**2") == "- formula: a**2 + b**2"
    assert readable("run `**x**` or **y**") == "run `**x**` or y"  # code keeps its syntax
    answer = "The customer is **name**: Gabriel [1]."
    html = answer_html(answer, [Marker(answer.index(" [1]"), "1", "/s/1", "source 1")])
    # answers are rendered Markdown: strong emphasis is <strong>, without its asterisks
    assert html.startswith("<p>The customer is <strong>name</strong>: Gabriel <a")
    assert "*" not in html
    stored = "- **name**: Gabriel\n- **email**: g@contoso.com"
    start = stored.index("**email")
    html = marked(stored, [(start, len(stored))], for_reading=True)
    assert html.endswith("<mark>email: g@contoso.com</mark>")
    assert marked(stored, [(start, len(stored))]).endswith("<mark>**email**: g@contoso.com</mark>")
    # a mark over nothing but hidden syntax is left out, not drawn empty
    assert marked("**ab**", [(0, 2)], for_reading=True) == "ab"


def test_links_read_as_their_text() -> None:
    """The converters write a document's hyperlinks as [text](address): readers see
    the text; the viewer's Markdown keeps the address; other brackets stay."""
    stored = (
        r"One [awesome \[big\] hyperlink](http://yahoo.com/a%20b). See [1] and [x](file:///etc)."
    )
    assert readable(stored) == "One awesome [big] hyperlink. See [1] and [x](file:///etc)."
    assert (
        readable("`[a](https://b)` and ![img](https://c)")
        == "`[a](https://b)` and ![img](https://c)"
    )
    raw = marked(stored, [])
    assert "(http://yahoo.com/a%20b)" in raw
