"""Locations of a chunk: Markdown lines and offsets, heading path, page, boxes.

A chunk is cut into one Location per page it touches (pages come from the
converter's per-line map) and per section it touches (a chunk that starts in a
tiny section takes in the next one), so the Locations' character ranges partition the
chunk's range exactly and each names a single page and a single heading path.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from documents.converters.base import SourceSpan
from documents.markdown_structure import MarkdownStructure
from documents.word_boxes import PageWords, line_box


@dataclass(frozen=True)
class LocationDraft:
    line_number_start: int
    line_number_end: int
    char_start: int
    char_end: int
    hierarchy: list[str]
    page_number: int | None
    boxes: list[list[float]] = field(default_factory=list)


class Locator:
    """Computes locations for chunk spans of one converted file."""

    def __init__(
        self,
        structure: MarkdownStructure,
        *,
        line_pages: Sequence[int | None],
        spans: Sequence[SourceSpan] = (),
        page_words: Callable[[int], PageWords | None] | None = None,
    ) -> None:
        """``page_words`` (a PDF's words by page number) narrows a line the range
        starts or ends inside to the words it carries; without it, whole lines."""
        self.structure = structure
        self.page_words = page_words
        self.line_pages = list(line_pages)
        self.spans = sorted(spans, key=lambda s: s.char_start)
        self._span_starts = [s.char_start for s in self.spans]

    def page_of_line(self, line: int) -> int | None:
        return self.line_pages[line - 1] if 0 < line <= len(self.line_pages) else None

    def locate(self, char_start: int, char_end: int) -> list[LocationDraft]:
        cuts = sorted(
            set(self._page_cuts(char_start, char_end))
            | set(self.structure.heading_starts_within(char_start, char_end))
        )
        bounds = [char_start, *cuts, char_end]
        return [self._draft(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]

    def _page_cuts(self, char_start: int, char_end: int) -> list[int]:
        """Offsets inside ``(char_start, char_end)`` where the page of the lines changes."""
        first_line = self.structure.line_of(char_start)
        last_line = self.structure.line_of(max(char_end - 1, char_start))
        cuts = []
        for line in range(first_line + 1, last_line + 1):
            if self.page_of_line(line) != self.page_of_line(line - 1):
                cut = self.structure.line_starts[line - 1]
                if char_start < cut < char_end:
                    cuts.append(cut)
        return cuts

    def _draft(self, start: int, end: int) -> LocationDraft:
        first_line = self.structure.line_of(start)
        page = self.page_of_line(first_line)
        return LocationDraft(
            line_number_start=first_line,
            line_number_end=self.structure.line_of(max(end - 1, start)),
            char_start=start,
            char_end=end,
            hierarchy=self.structure.hierarchy_at(start),
            page_number=page,
            boxes=self._boxes(start, end, page),
        )

    def _boxes(self, start: int, end: int, page: int | None) -> list[list[float]]:
        if page is None or not self.spans:
            return []
        boxes: list[list[float]] = []
        # spans are short (one PDF line); look back a bounded distance for overlaps
        index = max(bisect.bisect_left(self._span_starts, start) - 64, 0)
        for span in self.spans[index:]:
            if span.char_start >= end:
                break
            if span.char_end > start and span.page_number == page:
                for box in self._line_boxes(span, start, end):
                    if box not in boxes:
                        boxes.append(box)
        return boxes

    def _line_boxes(self, span: SourceSpan, start: int, end: int) -> list[list[float]]:
        row = [span.char_start, span.char_end, span.page_number, span.x0, span.y0, span.x1, span.y1]
        whole = start <= span.char_start and span.char_end <= end
        words = None if whole or self.page_words is None else self.page_words(span.page_number)
        if words is None:
            return [line_box(row)]
        text = self.structure.markdown[span.char_start : span.char_end]
        # [] when the range holds only spaces of this line: it carries none of its words
        return words.narrowed(row, text, [(start, end)])
