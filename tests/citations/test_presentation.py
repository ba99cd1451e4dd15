"""How answers read (citations/presentation.py), on sentences of the shared corpus as
the converters wrote them: quoted links are links, a table row's cells are cells,
no Markdown syntax and no backslash escape is left, and hostile text stays inert.
The answers are composed as the generators compose them (citations.composition)."""

from __future__ import annotations

import re

import pytest

from citations.composition import Composition, compose, compose_sentences
from citations.generators import Claim
from citations.markers import markers_in
from citations.presentation import (
    Marker,
    answer_html,
    answer_inline_html,
    answer_markdown,
    answer_text,
    quote_html,
    quote_text,
    reply_html,
)
from tests.support.corpus import CORPUS

FORMATTING = "docling/md/inline_and_formatting.md"
ESCAPES = "docling/md/escaped_characters.md"
TABLE = "hostile/pymupdf/test_markdown_bad_unicode.md"

HOSTILE = [
    "<script>window.pwned = 1</script> Script tags are text.",
    '<img src="x" onerror="window.pwned = 2"> Images are text.',
    "Questions go to [support](javascript:window.pwned=3) or [x](JaVaScRiPt:alert(1)).",
    "See [data](data:text/html,<b>x</b>) and [a file](file:///etc/passwd) and [here](page.html).",
    "Cite secret-plans.pdf [99] and \\[98\\] as the document says.",
    "Private \ue000use\ue001 and \ue0020\ue00399 code points.",
]


def _line(relative: str, containing: str) -> str:
    """The line of a corpus file that holds ``containing``, as the Markdown converter
    reads it (a byte that is not UTF-8 becomes U+FFFD)."""
    text = (CORPUS / relative).read_bytes().decode("utf-8", errors="replace")
    return next(line for line in text.splitlines() if containing in line)


def _composed(*replies: str, sentences: bool = False) -> Composition:
    claims = [
        Claim(passage=n, source_start=0, source_end=len(r), reply=r, relevance=1.0, sentence=n)
        for n, r in enumerate(replies)
    ]
    return compose_sentences(claims) if sentences else compose(claims)


def _markers(composition: Composition) -> list[Marker]:
    return [
        Marker(at=c.reply_end, quoted_as=c.quoted_as, href=f"/s/{c.quoted_as}", label="source")
        for c in composition.claims
    ]


def _no_markdown(text: str) -> None:
    assert "\\" not in text, text
    assert "](" not in text and "**" not in text, text


def test_a_quoted_link_is_a_link_and_emphasis_is_emphasis() -> None:
    """ "1. Pull the [**repository**](https://github.com/…)." read as a link, its list
    number gone; the exact answer keeps its escapes (what the API returns)."""
    line = _line(FORMATTING, "Pull the [**repository**]")
    composition = _composed(line, "Foo *emphasis* **strong emphasis** ***both***.")
    assert "\\[**repository**\\](https://github.com/docling-project/docling)" in (
        composition.answer
    )
    html = answer_html(composition.answer, _markers(composition))
    assert html.startswith('<p>Pull the <a href="https://github.com/docling-project/docling"')
    assert "><strong>repository</strong></a>." in html
    assert "<em>emphasis</em> <strong>strong emphasis</strong>" in html
    assert html.count('<a class="ref"') == 2
    _no_markdown(html)
    assert answer_text(composition.answer) == (
        "Pull the repository. [1] Foo emphasis strong emphasis both. [2]"
    )
    assert answer_text(composition.answer, addresses=True).startswith(
        "Pull the repository (https://github.com/docling-project/docling). [1]"
    )


def test_a_list_item_with_a_link_reads_as_its_words() -> None:
    line = _line(TABLE, "Find out more")  # "* Comment 3 with a link to [Find out more](…)"
    composition = _composed(line)
    html = str(answer_html(composition.answer, _markers(composition)))
    assert html.startswith('<p>Comment 3 with a link to <a href="https://pymupdf.readthedocs.io"')
    _no_markdown(html)
    assert answer_text(composition.answer) == "Comment 3 with a link to Find out more [1]"


def test_a_quoted_table_row_reads_as_its_cells() -> None:
    """ "|**Metals**|357|>5000|2755.9|": the composition escapes ">" (``\\>5000``);
    readers see the cells, bold as bold, the ">" as it is."""
    row = _line(TABLE, "**Metals**")
    for reply in (row, row.strip("|")):
        composition = _composed(reply)
        assert "\\>5000" in composition.answer
        html = str(answer_html(composition.answer, _markers(composition)))
        assert html.startswith(
            '<p><strong>Metals</strong><span class="cell-separator"> · </span>357'
        ), html
        assert "&gt;5000" in html and "|" not in html
        _no_markdown(html)
        assert answer_text(composition.answer) == "Metals · 357 · >5000 · 2755.9 [1]"
    assert quote_text(row) == "Metals · 357 · >5000 · 2755.9"  # the stored sentence too


def test_a_pipe_in_prose_or_code_is_not_a_row() -> None:
    line = _line(ESCAPES, "The pipe symbol")
    composition = _composed(line)
    assert answer_text(composition.answer) == (
        "The pipe symbol (| or |) only needs to be escaped in tables. [1]"
    )
    assert "<code>|</code>" in answer_html(composition.answer)


def test_character_references_read_as_their_characters() -> None:
    """The link of escaped_characters.md: its words are five character references."""
    line = _line(ESCAPES, "[&amp; &lt;")
    composition = _composed(line)
    html = str(answer_html(composition.answer, _markers(composition)))
    assert '<a href="https://en.wikipedia.org/wiki/Albert_Einstein"' in html
    assert ">&amp; &lt; &gt; \" '</a>" in html
    assert answer_text(composition.answer) == "& < > \" ' [1]"


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_quoted_text_stays_inert(hostile: str) -> None:
    composition = _composed(hostile, "A second sentence.", sentences=True)
    html = str(answer_html(composition.answer, _markers(composition)))
    assert not re.search(r"<(?!/?(p|a|strong|em|code|span)\b)", html), html
    assert not re.search(r"(javascript|data|file):", html, re.IGNORECASE), html
    links = re.findall(r'<a [^>]*href="([^"]*)"', html)
    assert links == ["/s/1", "/s/2"], links  # the markers' links, no other
    assert "\ue000" not in html and "\ue002" not in html
    text = answer_text(composition.answer)
    assert markers_in(composition.answer) == ["1", "2"]
    assert text.endswith(" [1] A second sentence. [2]")
    assert "](" not in text


def test_a_forged_marker_is_shown_as_text_and_never_linked() -> None:
    composition = _composed("Cite secret-plans.pdf [99] now.")
    html = str(answer_html(composition.answer, _markers(composition)))
    assert "Cite secret-plans.pdf [99] now." in html
    assert html.count("<a ") == 1
    assert answer_text(composition.answer) == "Cite secret-plans.pdf [99] now. [1]"


def test_markers_land_where_the_claims_end_and_pieces_render_alike() -> None:
    """Claims' offsets count the exact answer: each marker links at its claim's end,
    and a piece cut at a claim's start (the streamed sentences) renders the same."""
    replies = [_line(FORMATTING, "Pull the"), _line(TABLE, "**Metals**"), "Plain prose."]
    composition = _composed(*replies)
    markers = _markers(composition)
    whole = str(answer_inline_html(composition.answer, markers))
    pieces = []
    for claim, marker in zip(composition.claims, markers, strict=True):
        end = claim.reply_end + len(f" [{claim.quoted_as}]")
        shifted = Marker(marker.at - claim.reply_start, marker.quoted_as, marker.href, "source")
        pieces.append(
            str(answer_inline_html(composition.answer[claim.reply_start : end], [shifted]))
        )
        assert str(reply_html(claim.reply)) in whole
    assert " ".join(pieces) == whole
    # a marker whose offset is not where its claim ends is left as text
    stray = Marker(at=1, quoted_as="1", href="/elsewhere", label="x")
    assert "/elsewhere" not in answer_html(composition.answer, [stray])


def test_the_report_markdown_restores_only_links_that_may_be_followed() -> None:
    composition = _composed(_line(FORMATTING, "Pull the"), HOSTILE[2])
    markdown = answer_markdown(composition.answer)
    assert "Pull the [**repository**](https://github.com/docling-project/docling). [1]" in markdown
    assert "\\[support\\](javascript:window.pwned=3)" in markdown  # still escaped: no link
    assert markers_in(markdown) == ["1", "2"]


def test_a_stored_sentence_keeps_the_documents_own_escapes() -> None:
    """A document's own ``\\[`` is literal text, not a link to be made."""
    assert str(quote_html("Not \\[a link\\](https://example.com) here")) == (
        "Not [a link](https://example.com) here"
    )
    assert str(quote_html("- **Phone:** 555-0100")) == "<strong>Phone:</strong> 555-0100"
    assert quote_text("## Heading with `code`") == "Heading with code"
    assert str(quote_html("")) == ""
