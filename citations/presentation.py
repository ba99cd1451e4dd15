"""An answer as people read it: safe HTML for the pages and the admin, plain text
for the terminal and for lists, Markdown for the report.

An answer's stored text is exact and stays so (the API returns it byte for byte,
and claims' ``reply_start``/``reply_end`` count its characters): its quoted
sentences are the documents' Markdown, with every bracket and angle bracket
escaped by :func:`citations.markers.quoted_text_neutralise` so no ``[n]``, link or
tag can be forged. Readers see neither: here the answer is cut at its ``[n]``
markers (only unescaped ones are markers), each quoted piece gets back the
document's own Markdown, and that Markdown is rendered as one line: links as
links (web and mail addresses only), emphasis, code; a table row's cells are
joined by :data:`CELL_SEPARATOR`; a list item, heading or quote shows its words
without its opening syntax. The HTML is escaped and sanitised (core/markdown.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from citations.markers import MARKER
from core.markdown import inline_html, inline_text, link_allowed
from documents.chunk_context import cells

# what joins a quoted table row's cells, for readers (its pipes are table syntax)
CELL_SEPARATOR = " · "

# the backslash quoted_text_neutralise put before [ ] < > (one not itself escaped)
_NEUTRALISED = re.compile(r"(?<!\\)((?:\\\\)*)\\([\[\]<>])")
# what opens a line's block: headings, list items (and task boxes), quotes, and the
# converters' escape that keeps "1. April" from being a list item ("\1. April")
_BLOCK_OPENING = re.compile(
    r"^[ \t]*(?:(?:#{1,6}|[-*+](?:[ \t]+\[[ xX]\])?|\d{1,9}[.)]|>)[ \t]+|\\(?=\d{1,9}[.)]))+"
)
_CODE_SPAN = re.compile(r"(`+)[^`\n].*?\1|(`+)")
_PIPE = re.compile(r"(?<!\\)\|")
# a link quoted in an answer, escaped: \[words\](address)
_ESCAPED_LINK = re.compile(r"(?<!\\)\\\[((?:[^\[\]\\\n]|\\.)+)\\\]\(([^\s()]+)\)")


@dataclass(frozen=True)
class Marker:
    """``[quoted_as]`` right after ``answer[:at]``, linking to ``href``."""

    at: int
    quoted_as: str
    href: str
    label: str
    preview: str = ""  # the id of the marker's preview (role=tooltip), if any


def unneutralised(text: str) -> str:
    """Quoted text with its document's Markdown back: the escapes composition put
    before ``[ ] < >`` removed (the markers are found before, so none is forged)."""
    return _NEUTRALISED.sub(r"\1\2", text)


def _row_cells(text: str) -> list[str] | None:
    """The cells of ``text`` when it is a table row (or part of one) quoted whole:
    it opens or closes with a pipe, or has two pipes outside code, or one between
    spaces as a converter joins a label and its value; else None."""
    outside = _CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), text)
    pipes = [m.start() for m in _PIPE.finditer(outside)]
    stripped = outside.strip()
    if not pipes:
        return None
    single = len(pipes) == 1 and outside[pipes[0] - 1 : pipes[0] + 2] == " | "
    if len(pipes) >= 2 or single or stripped.startswith("|") or stripped.endswith("|"):
        found = cells(text.strip())
        return [cell for cell in found if cell] if len(found) > 1 else None
    return None


def _pieces(markdown: str) -> list[str]:
    """One quoted sentence's Markdown as the runs a reader sees (a row's cells)."""
    lead = _BLOCK_OPENING.match(markdown)
    body = markdown[lead.end() :] if lead else markdown
    return _row_cells(body) or [body]


def quote_html(markdown: str) -> SafeString:
    """A document's sentence (its Markdown as stored) as one line of safe HTML."""
    separator = format_html('<span class="cell-separator">{}</span>', CELL_SEPARATOR)
    return mark_safe(separator.join(inline_html(p) for p in _pieces(markdown)))  # noqa: S308 - sanitised pieces


def quote_text(markdown: str, *, addresses: bool = False) -> str:
    """A document's sentence as plain text (``addresses``: links keep their address)."""
    return CELL_SEPARATOR.join(inline_text(p, addresses=addresses) for p in _pieces(markdown))


def reply_html(reply: str) -> SafeString:
    """A quoted sentence as it stands in an answer (neutralised) as safe HTML."""
    return _text_html(reply)


def _text_html(text: str) -> SafeString:
    """A run of an answer without markers: its leading space kept, the rest rendered."""
    body = text.lstrip()
    space = " " if len(body) < len(text) else ""
    return mark_safe(space + quote_html(unneutralised(body)) if body else space)  # noqa: S308 - quote_html is safe


def _segments(answer: str) -> list[tuple[int, int, str | None]]:
    """``answer`` cut into runs of quoted text (``None``) and its `` [n]`` markers
    (their number), in order; offsets are the answer's own."""
    found, cursor = [], 0
    for marker in MARKER.finditer(answer):
        start = marker.start() - 1 if answer[marker.start() - 1 : marker.start()] == " " else None
        if start is None or start < cursor:
            continue
        found += [(cursor, start, None), (start, marker.end(), marker.group(1))]
        cursor = marker.end()
    return [*found, (cursor, len(answer), None)]


def answer_inline_html(answer: str, markers: Sequence[Marker] = ()) -> SafeString:
    """The answer (or a run of it) as one line of safe HTML, each claim's `` [n]``
    a link to its source when ``markers`` names it there (``aria-describedby``
    names its preview when it has one); an unlinked marker stays ``[n]``."""
    linked = {(m.at, m.quoted_as): m for m in markers}
    parts: list[str] = []
    for start, end, number in _segments(answer):
        marker = linked.get((start, number or ""))
        if number is None:
            parts.append(_text_html(answer[start:end]))
        elif marker is None:
            parts.append(f" [{number}]")
        else:
            parts.append(_marker_link(marker))
    return mark_safe("".join(parts))  # noqa: S308 - every piece is escaped or sanitised


def _marker_link(marker: Marker) -> SafeString:
    return format_html(
        ' <a class="ref" href="{}" aria-label="{}"{}>[{}]</a>',
        marker.href,
        marker.label,
        format_html(' aria-describedby="{}"', marker.preview) if marker.preview else "",
        marker.quoted_as,
    )


def answer_html(answer: str, markers: Sequence[Marker] = ()) -> SafeString:
    """The answer as a paragraph of safe HTML (see :func:`answer_inline_html`)."""
    return format_html("<p>{}</p>", answer_inline_html(answer, markers))


def answer_text(answer: str, *, addresses: bool = False) -> str:
    """The answer as plain text, its ``[n]`` markers kept: no Markdown syntax and no
    backslash escapes (``addresses``: a link's address follows its words)."""
    parts = []
    for start, end, number in _segments(answer):
        if number is not None:
            parts.append(f" [{number}]")
            continue
        body = answer[start:end].lstrip()
        space = " " if len(body) < end - start else ""
        parts.append(space + (quote_text(unneutralised(body), addresses=addresses) if body else ""))
    return "".join(parts)


def answer_markdown(text: str) -> str:
    """A run of an answer as Markdown a reader renders: the quoted links whose
    address may be followed become links again; every other bracket stays escaped,
    so no marker, link or tag is forged in the report."""

    def restored(link: re.Match[str]) -> str:
        return f"[{link.group(1)}]({link.group(2)})" if link_allowed(link.group(2)) else link[0]

    return _ESCAPED_LINK.sub(restored, text)
