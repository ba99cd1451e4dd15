"""The records every pass works on: lines with their boxes, in blocks.

A ``Line`` is one visual line of text; its ``parts`` keep the PDF box behind
each run of its characters, so whatever the later passes join (a row, a
paragraph) still knows where each character was drawn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from documents.converters.pdf.geometry import Box, union
from documents.converters.pdf.ruled import RuledTable

# a list item's marker at a line's start: a bullet, a number ("1.", "(2)", "b)", ".3")
BULLET = re.compile(
    r"^\s*([\u2022\u25e6\u25aa\u25cf\u2023\u2043\u25a0\u25a1\u2219\u00b7\u2013\u2014*-])\s+(?=\S)"
)
NUMBERED = re.compile(r"^\s*(\d{1,3}[.)]|\(\d{1,2}\)|\(?[a-zA-Z][.)]|\.\d{1,3})\s+(?=\S)")
# a line that is nothing but such a marker
MARKER_ONLY = re.compile(
    r"^\s*([\u2022\u25e6\u25aa\u25cf\u2023\u2043\u25a0\u25a1\u2219\u00b7\u2013*-]|\(?\d{1,3}[.)]|\.\d{1,3}|\(?[a-zA-Z][.)])\s*$"
)


class Part(NamedTuple):
    """Characters ``[start, end)`` of a line's text, drawn in ``box``."""

    start: int
    end: int
    box: Box


@dataclass(slots=True)
class Line:
    """One visual line: its text, box, and the PDF boxes behind parts of the text."""

    text: str
    box: Box
    size: float
    bold: bool
    parts: list[Part] = field(default_factory=list)
    mono: bool = False  # set (almost) wholly in a fixed-width font
    lead: int = 0  # blanks the line's text started with (a listing's indent, when typed)
    spaced: str = ""  # a fixed-width line's text with its inner blanks as set (alignment)

    @property
    def height(self) -> float:
        return self.box.height


@dataclass(slots=True)
class Block:
    """A group of lines PyMuPDF saw as one block, or a table's place on the page."""

    lines: list[Line]
    box: Box
    table: RuledTable | None = None
    lines_before_tables: int = 0  # how many lines it had before table rows left it

    @property
    def line_count(self) -> int:
        """Its lines as laid out: rows taken by a table still count (a block's
        leftover after a table is not a short title block)."""
        return max(len(self.lines), self.lines_before_tables)


def join_row(a: Line, b: Line) -> Line:
    """Two lines on one baseline become one line, keeping both source boxes."""
    text = a.text + " " + b.text
    shift = len(a.text) + 1
    parts = a.parts + [Part(s + shift, e + shift, box) for s, e, box in b.parts]
    size = a.size if len(a.text) >= len(b.text) else b.size
    return Line(text, union([a.box, b.box]), size, a.bold and b.bold, parts, a.mono and b.mono)


def join_lines(lines: list[Line], keeps_hyphen: Callable[[str, str], bool] | None = None) -> Line:
    """Lines of one paragraph become one line; words split by a hyphen are rejoined
    unless ``keeps_hyphen(text so far, next line)`` says the hyphen is a compound's."""
    text = ""
    parts: list[Part] = []
    for line in lines:
        if text:
            text = _joint(text, line.text, parts, keeps_hyphen)
        shift = len(text)
        text += line.text
        parts.extend(Part(s + shift, e + shift, box) for s, e, box in line.parts)
    first = lines[0]
    return Line(
        text, union([ln.box for ln in lines]), first.size, all(ln.bold for ln in lines), parts
    )


def _joint(
    text: str, following: str, parts: list[Part], keeps_hyphen: Callable[[str, str], bool] | None
) -> str:
    """``text`` ready for the paragraph's next line: a space added; or a line-end
    hyphen dropped where it splits a word (its part shortened with it), kept where
    it is a compound's."""
    if not _hyphenated(text, following):
        return text + " "
    if keeps_hyphen is not None and keeps_hyphen(text, following):
        return text
    start, _end, box = parts[-1]
    parts[-1] = Part(start, len(text) - 1, box)
    return text[:-1]


def _hyphenated(text: str, following: str) -> bool:
    """A lowercase letter and a hyphen end the text, a lowercase letter starts the
    next line (no regex: the text grows with the paragraph)."""
    return (
        len(text) > 1 and text[-1] == "-" and "a" <= text[-2] <= "z" and "a" <= following[:1] <= "z"
    )
