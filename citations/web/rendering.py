"""Turning stored passages and Markdown into HTML-safe pieces for the templates
(answers: ``citations/presentation.py``).

Everything the documents say is escaped; only the markup made here (links on
``[n]``, ``<mark>`` on cited spans) is trusted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from core.markdown import markdown_html

Range = tuple[int, int]

# CommonMark: a backslash before ASCII punctuation only keeps the punctuation literal
_BACKSLASH_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
# the converters keep a body line such as "1. April" from becoming a list item as "\1. April"
_NUMBER_ESCAPE = re.compile(r"(?m)^[ \t]*(\\)(?=\d{1,9}[.)])")
# where a backslash is literal: fenced code blocks and code spans
_CODE = re.compile(r"(?ms)^[ ]{0,3}(`{3,}|~{3,}).*?(?:^[ ]{0,3}\1[ \t]*$|\Z)|(`+)[^\n]+?\2")


# Strong emphasis on one line, as the JSON converter writes keys ("**name**: value")
# and Markdown uploads write bold. The opening "**" follows no letter, digit,
# backslash or asterisk and comes before a non-space; the closing one follows a
# non-space and comes before no letter, digit or asterisk (CommonMark's flanking
# rules, tightened): "2**31-1", "f(**kwargs)" and "0.45**, 0.32**" keep their text.
_STRONG = re.compile(r"(?<![\w\\*])\*\*(?=[^\s*])(?:[^*\n]|\*(?!\*))*?(?<=[^\s\\*])\*\*(?![\w*])")


# an inline link as the converters write them: [text](web or mail address)
_LINK = re.compile(r"(?<![\\!])\[((?:[^\[\]\\\n]|\\.)+)\]\((?:https?://|mailto:|ftp://)[^\s()]*\)")


def _hidden_markup(text: str) -> set[int]:
    """Offsets of the Markdown syntax a reader should not see, outside code: the
    backslashes that only escape, the ``**`` around strong emphasis, and a link's
    brackets and address (its text stays)."""
    code = [m.span() for m in _CODE.finditer(text)]

    def in_code(at: int) -> bool:
        return any(a <= at < b for a, b in code)

    found = {m.start() for m in _BACKSLASH_ESCAPE.finditer(text)}
    found |= {m.start(1) for m in _NUMBER_ESCAPE.finditer(text)}
    for strong in _STRONG.finditer(text):
        start, end = strong.span()
        if not in_code(start) and not in_code(end - 1):
            found |= {start, start + 1, end - 2, end - 1}
    for link in _LINK.finditer(text):
        start, end = link.span()
        if not in_code(start):
            found |= {start, *range(link.end(1), end)}
    return {at for at in found if not in_code(at)}


def _shown(text: str, start: int, end: int, hidden: set[int]) -> str:
    """``text[start:end]`` without the characters at ``hidden`` offsets."""
    return "".join(ch for at, ch in enumerate(text[start:end], start) if at not in hidden)


def readable(text: str) -> str:
    """``text`` without the Markdown a reader should not see: backslash escapes
    (``different\\_first\\_page`` reads ``different_first_page``) and the ``**``
    of strong emphasis (``**name**: Ada`` reads ``name: Ada``); code keeps both."""
    return _shown(text, 0, len(text), _hidden_markup(text))


def marked(
    text: str, ranges: Iterable[Range], *, base: int = 0, for_reading: bool = False
) -> SafeString:
    """``text`` escaped, with ``<mark>`` around the parts inside ``ranges``.

    ``ranges`` are absolute offsets; ``base`` is the offset of ``text[0]``.
    ``for_reading`` drops Markdown backslash escapes and strong-emphasis ``**``
    (passages shown to readers); the viewer's Markdown lines keep them, as the
    stored Markdown has them.
    """
    hidden = _hidden_markup(text) if for_reading else set()
    end_of_text = base + len(text)
    spans = sorted(
        (max(a, base) - base, min(b, end_of_text) - base)
        for a, b in ranges
        if a < end_of_text and b > base
    )
    parts, cursor = [], 0
    for start, end in spans:
        start = max(start, cursor)
        if end <= start or not _shown(text, start, end, hidden):
            continue  # nothing a reader would see inside: no empty <mark>
        parts += [
            escape(_shown(text, cursor, start, hidden)),
            "<mark>",
            escape(_shown(text, start, end, hidden)),
            "</mark>",
        ]
        cursor = end
    parts.append(escape(_shown(text, cursor, len(text), hidden)))
    return mark_safe("".join(parts))  # noqa: S308 - every piece of text is escaped above


def passage_html(text: str, ranges: Iterable[Range], *, base: int = 0) -> SafeString:
    """A quoted or retrieved passage as rendered Markdown, its cited spans marked."""
    return markdown_html(text, ranges, base=base)


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
