"""Turning stored answers and Markdown into HTML-safe pieces for the templates.

Everything the documents say is escaped; only the markup made here (links on
``[n]``, ``<mark>`` on cited spans) is trusted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

Range = tuple[int, int]

# CommonMark: a backslash before ASCII punctuation only keeps the punctuation literal
_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


# the converters keep a body line such as "1. April" from becoming a list item as "\1. April"
_NUMBER_ESCAPE = re.compile(r"(?m)^(\s*)\\(?=\d{1,9}[.)])")


def readable(text: str) -> str:
    """``text`` without the Markdown backslash escapes a reader should not see
    (``different\\_first\\_page`` reads ``different_first_page``)."""
    return _BACKSLASH_ESCAPE.sub(r"\1", _NUMBER_ESCAPE.sub(r"\1", text))


def marked(
    text: str, ranges: Iterable[Range], *, base: int = 0, for_reading: bool = False
) -> SafeString:
    """``text`` escaped, with ``<mark>`` around the parts inside ``ranges``.

    ``ranges`` are absolute offsets; ``base`` is the offset of ``text[0]``.
    ``for_reading`` drops Markdown backslash escapes (passages shown to readers);
    the viewer's Markdown lines keep them, as the stored Markdown has them.
    """
    shown = readable if for_reading else str
    end_of_text = base + len(text)
    spans = sorted(
        (max(a, base) - base, min(b, end_of_text) - base)
        for a, b in ranges
        if a < end_of_text and b > base
    )
    parts, cursor = [], 0
    for start, end in spans:
        start = max(start, cursor)
        if end <= start:
            continue
        parts += [
            escape(shown(text[cursor:start])),
            "<mark>",
            escape(shown(text[start:end])),
            "</mark>",
        ]
        cursor = end
    parts.append(escape(shown(text[cursor:])))
    return mark_safe("".join(parts))  # noqa: S308 - every piece of text is escaped above


@dataclass(frozen=True)
class Marker:
    """``[quoted_as]`` right after ``answer[:at]``, linking to ``href``."""

    at: int
    quoted_as: str
    href: str
    label: str


def answer_html(answer: str, markers: Sequence[Marker]) -> SafeString:
    """The answer with each claim's ``[n]`` marker turned into a link to its source."""
    parts, cursor = [], 0
    for marker in sorted(markers, key=lambda m: m.at):
        token = f" [{marker.quoted_as}]"
        if marker.at < cursor or not answer.startswith(token, marker.at):
            continue  # not where the claim says: leave the text as it is
        parts.append(escape(readable(answer[cursor : marker.at])))
        parts.append(
            format_html(
                ' <a class="ref" href="{}" aria-label="{}">[{}]</a>',
                marker.href,
                marker.label,
                marker.quoted_as,
            )
        )
        cursor = marker.at + len(token)
    parts.append(escape(readable(answer[cursor:])))
    return mark_safe("".join(parts))  # noqa: S308 - text escaped, links built by format_html


@dataclass(frozen=True)
class Line:
    number: int
    html: SafeString
    cited: bool
    page: int | None


def markdown_lines(
    markdown: str,
    *,
    first: int,
    last: int,
    cited_lines: Range,
    marks: Sequence[Range],
    page_of: Callable[[int], int | None],
) -> list[Line]:
    """Lines ``first..last`` (1-indexed) with cited lines flagged and spans marked."""
    lines, offset = [], 0
    for number, text in enumerate(markdown.split("\n"), start=1):
        if number > last:
            break
        if number >= first:
            lines.append(
                Line(
                    number=number,
                    html=marked(text, marks, base=offset),
                    cited=cited_lines[0] <= number <= cited_lines[1],
                    page=page_of(number),
                )
            )
        offset += len(text) + 1
    return lines
