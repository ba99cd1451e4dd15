"""Checks of the DESIGN.md provenance invariants, shared by the tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark").enable("table")


class _Span(Protocol):
    """What the checks read of a chunk (a model row or a draft)."""

    @property
    def char_start(self) -> int: ...
    @property
    def char_end(self) -> int: ...
    @property
    def hierarchy(self) -> list[str]: ...


class _Chunk(_Span, Protocol):
    @property
    def chunk_text(self) -> str: ...


class _Location(_Span, Protocol):
    @property
    def line_number_start(self) -> int: ...
    @property
    def line_number_end(self) -> int: ...


def headings_in_force(markdown: str, offset: int, body_start: int = 0) -> list[str]:
    """Independent recomputation of invariant 3: heading chain in force at ``offset``."""
    line_offsets = [0]
    for index, char in enumerate(markdown):
        if char == "\n":
            line_offsets.append(index + 1)
    first_line = markdown.count("\n", 0, body_start)
    tokens = _PARSER.parse(markdown[body_start:])
    stack: list[tuple[int, str]] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0:
            continue
        assert token.map is not None  # a heading token always has its lines
        line = token.map[0] + first_line
        start = line_offsets[line]
        start += len(markdown[start:]) - len(markdown[start:].lstrip(" \t"))
        if start > offset:
            break
        level = int(token.tag[1])
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, " ".join(tokens[index + 1].content.split())))
    return [text for _, text in stack]


def assert_chunk_invariants(
    markdown: str, chunk: _Chunk, locations: Sequence[_Location], body_start: int = 0
) -> None:
    """Invariants 1 and 3 for one chunk and its locations."""
    assert markdown[chunk.char_start : chunk.char_end] == chunk.chunk_text
    assert "".join(markdown[loc.char_start : loc.char_end] for loc in locations) == chunk.chunk_text
    assert locations[0].char_start == chunk.char_start
    assert locations[-1].char_end == chunk.char_end
    for loc in locations:
        first = markdown.count("\n", 0, loc.char_start) + 1
        last = markdown.count("\n", 0, max(loc.char_end - 1, loc.char_start)) + 1
        assert (loc.line_number_start, loc.line_number_end) == (first, last)
        lines = markdown.split("\n")[first - 1 : last]
        # a location cut at a page break ends with its last line's newline
        assert markdown[loc.char_start : loc.char_end] in "\n".join(lines) + "\n"
        assert loc.hierarchy == headings_in_force(markdown, loc.char_start, body_start)
    assert chunk.hierarchy == locations[0].hierarchy
