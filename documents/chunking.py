"""Heading-aware chunking: each chunk is an exact slice of the Markdown.

Sections (the text under one heading) are chunked on their own, so a chunk
never straddles two sections unless the first is tiny. Inside a section,
blocks are packed up to the token budget; a block too big for one chunk is
cut between lines (tables, lists, code: never mid-row) or sentences, and
consecutive chunks of a section share up to ``overlap`` tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from documents.markdown_structure import Block, MarkdownStructure
from documents.tokens import TokenMap

# with Arabic "؟", "؛" and Urdu "۔"
_SENTENCE_END = re.compile(r"(?<=[.!?;:\u061f\u061b\u06d4])[\"')\]]*\s+")
_LINE_SPLIT_KINDS = {"table", "bullet_list", "ordered_list", "fence", "code_block", "blockquote"}


@dataclass(frozen=True)
class ChunkSpan:
    char_start: int
    char_end: int
    token_count: int


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    tokens: int


class Chunker:
    """Cuts one Markdown text into chunk spans within a token budget."""

    def __init__(
        self, structure: MarkdownStructure, *, target: int, overlap: int, maximum: int
    ) -> None:
        self.structure = structure
        self.text = structure.markdown
        self.tokens = TokenMap(self.text)
        self.target = min(target, maximum)
        self.overlap = min(overlap, self.target // 2)
        self.maximum = maximum

    def chunk(self) -> list[ChunkSpan]:
        spans: list[ChunkSpan] = []
        carry: list[_Piece] = []
        for section in self._sections():
            pieces = carry + [p for block in section for p in self._pieces(block)]
            carry = []
            if not pieces:
                continue
            total = sum(p.tokens for p in pieces)
            if total < self.target // 4 and not self._is_last(section):
                carry = pieces  # a tiny section rides along with the next one
                continue
            spans.extend(self._pack(pieces))
        if carry:
            spans.extend(self._pack(carry))
        return spans

    def _sections(self) -> list[list[Block]]:
        sections: list[list[Block]] = []
        for block in self.structure.blocks:
            if block.kind == "heading" or not sections:
                sections.append([])
            sections[-1].append(block)
        self._last_section = sections[-1] if sections else None
        return sections

    def _is_last(self, section: list[Block]) -> bool:
        return section is self._last_section

    def _piece(self, start: int, end: int) -> _Piece | None:
        segment = self.text[start:end]
        left = len(segment) - len(segment.lstrip())
        right = len(segment.rstrip())
        if right <= left:
            return None
        start, end = start + left, start + right
        return _Piece(start, end, self.tokens.count(start, end))

    def _pieces(self, block: Block) -> list[_Piece]:
        whole = self._piece(block.char_start, block.char_end)
        if whole is None:
            return []
        if whole.tokens <= self.target:
            return [whole]
        if block.kind in _LINE_SPLIT_KINDS:
            parts = self._split_lines(whole)
        else:
            parts = self._split_sentences(whole)
        return [q for p in parts for q in self._hard_split(p)]

    def _split_lines(self, piece: _Piece) -> list[_Piece]:
        parts, start = [], piece.start
        while start < piece.end:
            newline = self.text.find("\n", start, piece.end)
            end = piece.end if newline == -1 else newline
            part = self._piece(start, end)
            if part:
                parts.append(part)
            start = end + 1
        return parts

    def _split_sentences(self, piece: _Piece) -> list[_Piece]:
        parts, start = [], piece.start
        for match in _SENTENCE_END.finditer(self.text, piece.start, piece.end):
            part = self._piece(start, match.start())
            if part:
                parts.append(part)
            start = match.end()
        tail = self._piece(start, piece.end)
        return parts + ([tail] if tail else [])

    def _hard_split(self, piece: _Piece) -> list[_Piece]:
        """Cut a piece still over budget at token boundaries, preferring spaces."""
        parts, start = [], piece.start
        while start < piece.end:
            if self.tokens.count(start, piece.end) <= self.target:
                end = piece.end
            else:
                end = self.tokens.offset_after(start, self.target)
                space = self.text.rfind(" ", start, end)
                end = space if space > start + (end - start) // 2 else end
            part = self._piece(start, max(end, start + 1))
            if part:
                parts.append(part)
            start = max(end, start + 1)
        return parts

    def _pack(self, pieces: list[_Piece]) -> list[ChunkSpan]:
        spans: list[ChunkSpan] = []
        first = 0
        while first < len(pieces):
            last, total = first, pieces[first].tokens
            while last + 1 < len(pieces) and self._fits(pieces[first], pieces[last + 1]):
                last += 1
            start, end = pieces[first].start, pieces[last].end
            total = self.tokens.count(start, end)
            spans.append(ChunkSpan(start, end, total))
            if last + 1 >= len(pieces):
                break
            first = self._overlap_start(pieces, first, last)
        return spans

    def _fits(self, first: _Piece, candidate: _Piece) -> bool:
        return self.tokens.count(first.start, candidate.end) <= self.target

    def _overlap_start(self, pieces: list[_Piece], first: int, last: int) -> int:
        """First piece of the next chunk: step back over up to ``overlap`` tokens."""
        start, shared = last + 1, 0
        while start - 1 > first and shared + pieces[start - 1].tokens <= self.overlap:
            start -= 1
            shared += pieces[start].tokens
        return start


def chunk_markdown(
    structure: MarkdownStructure, *, target: int, overlap: int, maximum: int = 254
) -> list[ChunkSpan]:
    """Chunk spans of ``structure``'s Markdown, in document order."""
    return Chunker(structure, target=target, overlap=overlap, maximum=maximum).chunk()
