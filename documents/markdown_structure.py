"""The block structure of Markdown: headings and top-level blocks with their
character ranges, parsed by markdown-it (CommonMark + tables).

Everything is in absolute offsets of the ingested Markdown, lines are split
on "\n" only, and parsing starts at ``body_start`` so front matter is never
mistaken for a heading.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

from markdown_it import MarkdownIt

# Block structure only: heading text is the inline token's raw content, so the inline
# rules (most of the parse time) never run.
_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    char_start: int


@dataclass(frozen=True)
class Block:
    """A top-level block: ``kind`` is markdown-it's token type without ``_open``."""

    kind: str
    char_start: int
    char_end: int


class MarkdownStructure:
    """Line offsets, headings and blocks of one Markdown text."""

    def __init__(self, markdown: str, *, body_start: int = 0) -> None:
        self.markdown = markdown
        self.body_start = body_start
        starts = [0]
        position = markdown.find("\n")
        while position != -1:
            starts.append(position + 1)
            position = markdown.find("\n", position + 1)
        self.line_starts = starts
        self.headings, self.blocks = self._parse()

    def line_of(self, offset: int) -> int:
        """1-indexed line containing character ``offset``."""
        return bisect.bisect_right(self.line_starts, offset)

    def line_end(self, line: int) -> int:
        """Offset just past the text of 1-indexed ``line`` (before its "\n")."""
        if line < len(self.line_starts):
            return self.line_starts[line] - 1
        return len(self.markdown)

    def _block_range(self, first_line: int, last_line: int) -> tuple[int, int]:
        start = self.line_starts[first_line]
        end = self.line_end(last_line)
        text = self.markdown[start:end]
        stripped_end = start + len(text.rstrip())
        stripped_start = start + (len(text) - len(text.lstrip()))
        return stripped_start, max(stripped_end, stripped_start)

    def _parse(self) -> tuple[list[Heading], list[Block]]:
        first_body_line = self.line_of(self.body_start) - 1 if self.body_start else 0
        tokens = _PARSER.parse(self.markdown[self.body_start :])
        headings: list[Heading] = []
        blocks: list[Block] = []
        for index, token in enumerate(tokens):
            if token.level != 0 or token.map is None or token.nesting == -1:
                continue
            first, last = token.map[0] + first_body_line, token.map[1] + first_body_line
            start, end = self._block_range(first, last)
            if end <= start:
                continue
            kind = token.type.removesuffix("_open")
            blocks.append(Block(kind=kind, char_start=start, char_end=end))
            if token.type == "heading_open":
                inline = tokens[index + 1]
                text = " ".join(inline.content.split())
                headings.append(Heading(level=int(token.tag[1]), text=text, char_start=start))
        return headings, blocks

    @cached_property
    def _heading_starts(self) -> list[int]:
        return [heading.char_start for heading in self.headings]

    @cached_property
    def _chains(self) -> list[tuple[str, ...]]:
        """The heading chain in force right after each heading."""
        chains: list[tuple[str, ...]] = []
        stack: list[Heading] = []
        for heading in self.headings:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            chains.append(tuple(h.text for h in stack))
        return chains

    def hierarchy_at(self, offset: int) -> list[str]:
        """The chain of headings in force at ``offset`` (a heading starting there counts)."""
        upto = bisect.bisect_right(self._heading_starts, offset)
        return list(self._chains[upto - 1]) if upto else []

    def heading_starts_within(self, start: int, end: int) -> list[int]:
        """Offsets of the headings that begin inside ``(start, end)``."""
        low = bisect.bisect_right(self._heading_starts, start)
        high = bisect.bisect_left(self._heading_starts, end)
        return self._heading_starts[low:high]

    def section_index_at(self, offset: int) -> int:
        """Index of the section (0 = before the first heading) containing ``offset``."""
        return bisect.bisect_right(self._heading_starts, offset)
