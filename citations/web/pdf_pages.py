"""PDF pages as images, and stored boxes as positions on those images.

Boxes are stored in PDF points in the unrotated page space (PyMuPDF's
``get_text('dict')``), while a page renders as displayed: boxes are turned by
``page.rotation_matrix`` and expressed as percentages of ``page.rect``, so the
highlights stay on their words at any image size and without JavaScript.

Only files that reached ``ready`` are rendered: their bytes already went
through the sandboxed converter once, so the parser is known to handle them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import pymupdf
from django.http import Http404

from documents.models import File
from documents.storage import original_open
from documents.word_boxes import PageWords, line_box

RENDER_DPI = 120
MAX_SIDE_PX = 2000  # a poster-sized page is scaled down instead of rendered huge


@dataclass(frozen=True)
class Box:
    """A highlight in percent of the page image: left, top, width, height."""

    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True)
class PageGeometry:
    number: int
    width: float
    height: float
    matrix: pymupdf.Matrix

    def box(self, raw: Sequence[float]) -> Box:
        rect = pymupdf.Rect(raw) * self.matrix
        return Box(
            left=round(100 * rect.x0 / self.width, 3),
            top=round(100 * rect.y0 / self.height, 3),
            width=round(100 * rect.width / self.width, 3),
            height=round(100 * rect.height / self.height, 3),
        )


def _renderable(file: File) -> bool:
    # published once: its pages stay shown while it is converted again
    return file.kind == "pdf" and file.ready_at is not None


def _document(file: File) -> pymupdf.Document:
    with original_open(file.storage_key) as handle:
        return pymupdf.open(stream=handle.read(), filetype="pdf")


def page_highlights(
    file: File, *, markdown: str, spans: Sequence[Sequence], wanted: dict[int, dict[str, list]]
) -> dict[int, tuple[PageGeometry, dict[str, list[list[float]]]]]:
    """Each named page's geometry and, per named set of Markdown character ranges,
    the boxes of the text carrying them: whole PDF lines where a range covers the
    line, the words' extent where it starts or ends inside one.

    ``spans`` are SourceBoxes rows; sorted by offset, only those near the ranges
    are looked at."""
    if not _renderable(file):
        return {}
    spans = sorted(spans, key=lambda span: span[0])
    starts = [span[0] for span in spans]
    result = {}
    with _document(file) as document:
        for number in sorted(wanted):
            if not 1 <= number <= document.page_count:
                continue
            page = document[number - 1]
            geometry = PageGeometry(
                number=number,
                width=page.rect.width,
                height=page.rect.height,
                matrix=page.rotation_matrix,
            )
            lines = PageLines(page, markdown, spans, starts, number)
            boxes = {name: lines.boxes(ranges) for name, ranges in wanted[number].items()}
            result[number] = (geometry, boxes)
    return result


class PageLines:
    """The stored line boxes of one page, narrowed to words where a range needs it."""

    LOOK_BACK = 64  # spans are one line each: a range's first one is this near

    def __init__(
        self,
        page: pymupdf.Page,
        markdown: str,
        spans: Sequence[Sequence],
        starts: list[int],
        number: int,
    ) -> None:
        self.page = page
        self.markdown = markdown
        self.spans = spans
        self.starts = starts
        self.number = number
        self._words: PageWords | None = None

    def boxes(self, ranges: list[tuple[int, int]]) -> list[list[float]]:
        if not ranges:
            return []
        low, high = min(a for a, _ in ranges), max(b for _, b in ranges)
        found: list[list[float]] = []
        index = max(bisect_left(self.starts, low) - self.LOOK_BACK, 0)
        for span in self.spans[index:]:
            start, end, span_page = span[0], span[1], span[2]
            if start >= high:
                break
            touching = [(a, b) for a, b in ranges if a < end and b > start]
            if span_page != self.number or not touching:
                continue
            if all(a <= start and b >= end for a, b in touching):  # no words to read
                line = [line_box(span)]
            else:
                line = self._page_words().narrowed(span, self.markdown[start:end], touching)
            found += [box for box in line if box not in found]
        return found

    def _page_words(self) -> PageWords:
        if self._words is None:
            self._words = PageWords(self.page)
        return self._words


def page_png(file: File, number: int) -> bytes:
    """Page ``number`` (1-indexed) rendered as displayed; 404 if there is none."""
    if not _renderable(file):
        raise Http404("no page images for this file")
    with _document(file) as document:
        if not 1 <= number <= document.page_count:
            raise Http404("no such page")
        page = document[number - 1]
        longest = max(page.rect.width, page.rect.height) or 1
        zoom = min(RENDER_DPI / 72, MAX_SIDE_PX / longest)
        return page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False).tobytes("png")


CROP_MARGIN_PT = 36.0  # context kept above and below the highlight: half an inch
CROP_OUTLINE = (0.78, 0.35, 0.0)  # the viewer's outline colour (--hl-strong), as RGB
CROP_FILL = (1.0, 0.55, 0.0)


def page_crop_png(file: File, number: int, boxes: Sequence[Box]) -> bytes:
    """The band of page ``number`` holding ``boxes`` (page-wide, a margin above and
    below), with the boxes drawn on it: a highlight that reads on a phone or in a
    preview. 404 when there is nothing to crop."""
    if not _renderable(file) or not boxes:
        raise Http404("no highlight to crop")
    with _document(file) as document:
        if not 1 <= number <= document.page_count:
            raise Http404("no such page")
        page = document[number - 1]
        width, height = page.rect.width, page.rect.height
        rects = [
            pymupdf.Rect(
                b.left * width / 100,
                b.top * height / 100,
                (b.left + b.width) * width / 100,
                (b.top + b.height) * height / 100,
            )
            for b in boxes
        ]
        shape = page.new_shape()
        for rect in rects:
            shape.draw_rect(rect * page.derotation_matrix)
        shape.finish(color=CROP_OUTLINE, fill=CROP_FILL, fill_opacity=0.3, width=1)
        shape.commit()
        top = min(r.y0 for r in rects) - CROP_MARGIN_PT
        bottom = max(r.y1 for r in rects) + CROP_MARGIN_PT
        clip = pymupdf.Rect(0, top, width, bottom) & page.rect
        zoom = min(RENDER_DPI / 72, MAX_SIDE_PX / (max(width, height) or 1))
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, alpha=False)
        return pixmap.tobytes("png")
