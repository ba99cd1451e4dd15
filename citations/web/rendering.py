"""Turning stored answers and Markdown into HTML-safe pieces for the templates.

Everything the documents say is escaped; only the markup made here (links on
``[n]``, ``<mark>`` on cited spans) is trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

Range = tuple[int, int]


def marked(text: str, ranges: Iterable[Range], *, base: int = 0) -> SafeString:
    """``text`` escaped, with ``<mark>`` around the parts inside ``ranges``.

    ``ranges`` are absolute offsets; ``base`` is the offset of ``text[0]``.
    """
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
        parts += [escape(text[cursor:start]), "<mark>", escape(text[start:end]), "</mark>"]
        cursor = end
    parts.append(escape(text[cursor:]))
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
        parts.append(escape(answer[cursor : marker.at]))
        parts.append(
            format_html(
                ' <a class="ref" href="{}" aria-label="{}">[{}]</a>',
                marker.href,
                marker.label,
                marker.quoted_as,
            )
        )
        cursor = marker.at + len(token)
    parts.append(escape(answer[cursor:]))
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
