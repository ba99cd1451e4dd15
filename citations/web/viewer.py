"""What the source viewer shows for one cited (or merely retrieved) chunk:
its pages with highlight boxes (PDF), its Markdown lines with the cited span
marked (every format), and the links of the provenance chain.

It reads the chunk's own file revision and Markdown, which are never
changed afterwards, so a viewer opened from an old answer shows the document
as it was when the answer was given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.http import Http404
from django.urls import reverse
from django.utils.safestring import SafeString

from citations.places import Place, places_of
from citations.web.pdf_pages import Box, page_crop_png, page_highlights
from citations.web.rendering import Line, Range, markdown_lines, passage_html, readable
from documents.models import Chunk, DocumentMarkdown, File, Location, SourceBoxes

CONTEXT_LINES = 30
THUMBNAILS_AROUND = 3  # page thumbnails shown each side of the page in view


@dataclass(frozen=True)
class PageView:
    number: int
    image_url: str
    width: float
    height: float
    boxes: list[Box]
    claim_boxes: list[Box]


@dataclass(frozen=True)
class Converted:
    """A part of a non-PDF document as rendered Markdown, titled for what it is."""

    title: str
    html: SafeString


@dataclass(frozen=True)
class SourceView:
    file: File
    chunk: Chunk
    markdown: DocumentMarkdown
    locations: list[Location]
    unit: str  # "page" or "slide"
    pages: list[PageView]
    lines: list[Line]
    whole: bool
    total_lines: int
    anchor: str
    hierarchy: list[str]  # the headings over the first quoted sentence (or the chunk's start)
    converted: Converted | None = None  # a non-PDF's page, slide or section, rendered

    @property
    def lands_on(self) -> str:
        """Where the page opens: the first outlined PDF line, else the rendered passage."""
        return "claim" if any(p.claim_boxes for p in self.pages) else "converted"

    @property
    def shown_page(self) -> int | None:
        return self.pages[0].number if self.pages else None

    @property
    def page_count(self) -> int:
        return self.markdown.page_count or max(self.markdown.line_pages or [0])

    @property
    def previous_page(self) -> int | None:
        shown = self.shown_page
        return shown - 1 if shown and shown > 1 else None

    @property
    def next_page(self) -> int | None:
        shown = self.shown_page
        return shown + 1 if shown and shown < self.page_count else None

    @property
    def thumbnails(self) -> list[tuple[int, str]]:
        """Pages near the shown one, with their image addresses (drawn small)."""
        shown = self.shown_page
        if not shown:
            return []
        first = max(1, shown - THUMBNAILS_AROUND)
        last = min(self.page_count, shown + THUMBNAILS_AROUND)
        return [
            (n, reverse("web-page-image", args=[self.file.pk, n])) for n in range(first, last + 1)
        ]

    @property
    def page_numbers(self) -> list[int]:
        return sorted({loc.page_number for loc in self.locations if loc.page_number})


def unit_of(kind: str) -> str:
    return "slide" if kind == "pptx" else "page"


def anchor_of(*, kind: str, page: int | None, line: int) -> str:
    """The fragment a link to the viewer scrolls to: the page image or the first line."""
    return f"page-{page}" if kind == "pdf" and page else f"L{line}"


def source_view(
    *, chunk: Chunk, claims: Sequence[Range], whole: bool, page: int | None = None
) -> SourceView:
    """Everything the viewer draws; ``claims`` are offsets into ``chunk_text``."""
    markdown = chunk.markdown
    locations = list(chunk.locations.order_by("ordinal"))
    marks = [(chunk.char_start + a, chunk.char_start + b) for a, b in claims] or [
        (chunk.char_start, chunk.char_end)
    ]
    total = markdown.markdown.count("\n") + 1
    first, last = 1, total
    if not whole:
        first = max(1, chunk.line_number_start - CONTEXT_LINES)
        last = min(total, chunk.line_number_end + CONTEXT_LINES)
    line_pages = markdown.line_pages or []
    lines = markdown_lines(
        markdown.markdown,
        first=first,
        last=last,
        cited_lines=(chunk.line_number_start, chunk.line_number_end),
        marks=marks,
        page_of=lambda n: line_pages[n - 1] if 0 < n <= len(line_pages) else None,
    )
    places = places_of(
        chunk_text=chunk.chunk_text,
        chunk_start=chunk.char_start,
        locations=locations,
        claims=claims,
    )
    first_place = places[0] if places else None
    return SourceView(
        file=chunk.file,
        chunk=chunk,
        markdown=markdown,
        locations=locations,
        unit=unit_of(chunk.file.kind),
        pages=_pages(chunk.file, markdown, locations, marks, only=page),
        lines=lines,
        whole=whole or (first == 1 and last == total),
        total_lines=total,
        anchor=anchor_of(
            kind=chunk.file.kind,
            page=first_place.page if first_place else chunk.page_start,
            line=first_place.line if first_place else chunk.line_number_start,
        ),
        hierarchy=list(first_place.hierarchy) if first_place else chunk.hierarchy,
        converted=None
        if chunk.file.kind == "pdf"
        else _converted(chunk, markdown.markdown, line_pages, marks, first_place),
    )


HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
MAX_CONVERTED_LINES = 400  # a longer section is cut to the chunk and its context


def _converted(
    chunk: Chunk, text: str, line_pages: list, marks: list[Range], place: Place | None
) -> Converted:
    """The page or slide holding the first quoted sentence (formats with pages), else
    the section holding it (the chunk's start when nothing is quoted)."""
    lines = text.split("\n")
    page = (place.page if place else None) or chunk.page_start
    line = place.line if place else chunk.line_number_start
    if page and line_pages:
        numbers = [n for n, p in enumerate(line_pages, start=1) if p == page]
        first, last = (numbers[0], numbers[-1]) if numbers else (0, 0)
        title = f"{unit_of(chunk.file.kind).capitalize()} {page} as converted text"
    else:
        first, last, heading = _section(lines, line, line)
        title = f"Section “{heading}” as converted text" if heading else "The converted text"
    if not first or last - first > MAX_CONVERTED_LINES:
        first = max(1, chunk.line_number_start - CONTEXT_LINES)
        last = min(len(lines), chunk.line_number_end + CONTEXT_LINES)
        title = f"Lines {first}–{last} as converted text"
    base = sum(len(line) + 1 for line in lines[: first - 1])
    return Converted(
        title=title, html=passage_html("\n".join(lines[first - 1 : last]), marks, base=base)
    )


def _section(lines: list[str], start: int, end: int) -> tuple[int, int, str]:
    """Lines (1-indexed) of the section around lines ``start..end``: from the nearest
    heading above to the next heading of the same or a higher level."""
    top, level, heading = 1, 7, ""
    for number in range(min(start, len(lines)), 0, -1):
        found = HEADING.match(lines[number - 1])
        if found:
            top, level, heading = number, len(found.group(1)), found.group(2)
            break
    bottom = len(lines)
    for number in range(max(end, top) + 1, len(lines) + 1):
        found = HEADING.match(lines[number - 1])
        if found and len(found.group(1)) <= level:
            bottom = number - 1
            break
    return top, bottom, readable(heading)


def highlight_crop(*, chunk: Chunk, claims: Sequence[Range]) -> bytes:
    """The first PDF page band that holds the cited words of ``claims`` (offsets
    into ``chunk_text``), drawn highlighted; 404 when none is on a page image."""
    locations = list(chunk.locations.order_by("ordinal"))
    marks = [(chunk.char_start + a, chunk.char_start + b) for a, b in claims]
    for page in _pages(chunk.file, chunk.markdown, locations, marks):
        if page.claim_boxes:
            return page_crop_png(chunk.file, page.number, page.claim_boxes)
    raise Http404("no highlight on a page image")


def _pages(
    file: File,
    markdown: DocumentMarkdown,
    locations: list[Location],
    marks: list[Range],
    *,
    only: int | None = None,
) -> list[PageView]:
    """The cited pages with their boxes; ``only`` shows that one page instead (the
    reader paging through the document), its boxes drawn if it holds cited text."""
    numbers = sorted({loc.page_number for loc in locations if loc.page_number and loc.boxes})
    if only is not None:
        numbers = [only]
    stored = SourceBoxes.objects.filter(markdown=markdown).values_list("spans", flat=True).first()
    wanted = {
        number: {
            "chunk": [
                (loc.char_start, loc.char_end) for loc in locations if loc.page_number == number
            ],
            "claims": marks,
        }
        for number in numbers
    }
    highlights = page_highlights(
        file, markdown=markdown.markdown, spans=stored or [], wanted=wanted
    )
    pages = []
    for number, (geometry, boxes) in highlights.items():
        chunk_boxes = boxes["chunk"] or [  # converted before spans were stored
            b for loc in locations if loc.page_number == number for b in loc.boxes
        ]
        pages.append(
            PageView(
                number=number,
                image_url=reverse("web-page-image", args=[file.pk, number]),
                width=geometry.width,
                height=geometry.height,
                boxes=[geometry.box(b) for b in chunk_boxes],
                claim_boxes=[geometry.box(b) for b in boxes["claims"]],
            )
        )
    return pages
