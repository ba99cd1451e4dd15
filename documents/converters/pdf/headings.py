"""Which lines are headings, and of which level.

The outline (bookmarks) is trusted when at least half its titles are found on
their pages: its titles are the headings, at its levels. Otherwise type decides:
the few sizes clearly larger than the body's, used for little of the text, are
levels 1, 2, …; short bold lines at body size are one level below them, unless
bold is so common in the document that it marks nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import pymupdf

from documents.converters.pdf.lines import Block, Line
from documents.converters.pdf.thresholds import (
    BOLD_HEADING_BLOCK_LINES,
    BOLD_HEADING_SIZE_RATIO,
    BOLD_RARE_SHARE,
    BOLD_TITLE_MAX_WORDS,
    DEFAULT_BODY_SIZE_PT,
    FONT_HEADING_LEVELS,
    HEADING_BLOCK_LINES,
    HEADING_MAX_CHARS,
    HEADING_SIZE_MAX_SHARE,
    HEADING_SIZE_RATIO,
    MAX_HEADING_LEVEL,
    OUTLINE_TRUST_SHARE,
)

LevelOf = Callable[[Line, Block], int]  # a line's heading level in its block; 0: no heading
_LETTER = re.compile(r"[^\W\d_]")
_TITLE_NUMBERING = re.compile(r"^\s*((part|chapter|section)\s+)?[\dIVXivx]+([.\d]*)\s*[-.:)]?\s+")


def normalize_title(text: str) -> str:
    """Outline titles and on-page headings compared without numbering, case or spacing."""
    text = _TITLE_NUMBERING.sub("", text)
    return re.sub(r"\W+", " ", text).strip().lower()


def body_size(pages: list[list[Block]]) -> float:
    """The most common font size by character count."""
    sizes: Counter[float] = Counter()
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else DEFAULT_BODY_SIZE_PT


class Headings:
    """Decides which lines are headings: outline titles if trusted, else font size/weight."""

    def __init__(self, doc: pymupdf.Document, pages: list[list[Block]]) -> None:
        self.body = body_size(pages)
        self.toc: dict[int, list[tuple[int, str]]] = {}
        try:
            toc = doc.get_toc(simple=True)
        except Exception:  # a damaged outline: headings from type
            toc = []
        for level, title, page in toc:
            if normalize_title(title):
                self.toc.setdefault(page, []).append((level, normalize_title(title)))
        self.toc_entries = len(toc)
        self.use_toc = bool(toc) and self._toc_matches(pages) >= OUTLINE_TRUST_SHARE * len(toc)
        self._font_levels(pages)

    def _toc_matches(self, pages: list[list[Block]]) -> int:
        """How many outline titles are found as a line of the page they point to."""
        matched = 0
        for page_no, entries in self.toc.items():
            if not 1 <= page_no <= len(pages):
                continue
            texts = {normalize_title(ln.text) for b in pages[page_no - 1] for ln in b.lines}
            matched += sum(1 for _lvl, title in entries if title in texts)
        return matched

    def _font_levels(self, pages: list[list[Block]]) -> None:
        """Heading levels by size: the largest sizes, set in short blocks, that only a
        small share of the text uses; and whether bold is rare enough to mark one."""
        large = self.body * HEADING_SIZE_RATIO
        sizes: Counter[float] = Counter()
        total = bold_lines = lines = 0
        for block in (block for blocks in pages for block in blocks):
            for ln in block.lines:
                total += len(ln.text)
                lines += 1
                bold_lines += ln.bold and ln.size < large
                if ln.size >= large and len(block.lines) <= HEADING_BLOCK_LINES:
                    sizes[ln.size] += len(ln.text)
        rare = (s for s, n in sizes.items() if n < HEADING_SIZE_MAX_SHARE * total)
        big = sorted(rare, reverse=True)[:FONT_HEADING_LEVELS]
        self.levels = {s: i + 1 for i, s in enumerate(big)}
        self.bold_level = min(MAX_HEADING_LEVEL, len(big) + 1)
        self.bold_ok = bold_lines <= BOLD_RARE_SHARE * max(lines, 1)

    def classifier(self, page_no: int) -> LevelOf:
        """The level of each line of page ``page_no``, asked in reading order: an
        outline title counts once, for the first line that reads as it."""
        pending = list(self.toc.get(page_no, []))

        def level(line: Line, block: Block) -> int:
            if not _LETTER.search(line.text) or len(line.text) > HEADING_MAX_CHARS:
                return 0
            if self.use_toc:
                return _outline_level(line, pending)
            if line.size in self.levels and block.line_count <= HEADING_BLOCK_LINES:
                return self.levels[line.size]
            return self.bold_level if self._bold_heading(line, block) else 0

        return level

    def _bold_heading(self, line: Line, block: Block) -> bool:
        """A short bold title at body size, where bold is rare enough to mark one."""
        return (
            self.bold_ok
            and line.bold
            and line.size >= self.body * BOLD_HEADING_SIZE_RATIO
            and block.line_count <= BOLD_HEADING_BLOCK_LINES
            and _bold_title_so_far(line, block)
        )


def _outline_level(line: Line, pending: list[tuple[int, str]]) -> int:
    """The level of the outline entry ``line`` reads as (taken from ``pending``); 0
    if none."""
    norm = normalize_title(line.text)
    for k, (lvl, title) in enumerate(pending):
        if title == norm:
            del pending[k]
            return min(lvl, MAX_HEADING_LEVEL)
    return 0


def _bold_title_so_far(line: Line, block: Block) -> bool:
    """``line`` could be a bold title, and no earlier line of its block is too long to
    be one: the short last line of a bold paragraph is not a heading on its own, while
    "Schedule 2:" above "Payment Terms" still lets the second line be one."""
    for earlier in block.lines:
        if not (earlier.bold and len(earlier.text.split()) <= BOLD_TITLE_MAX_WORDS):
            return False
        if earlier is line:
            return not line.text.rstrip().endswith((".", ",", ":", ";"))
    return False
