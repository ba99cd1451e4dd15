"""What the source viewer shows for one cited (or merely retrieved) chunk:
its pages with highlight boxes (PDF), its Markdown lines with the cited span
marked (every format), and the links of the provenance chain.

It reads the chunk's own file revision and Markdown, which are never
changed afterwards, so a viewer opened from an old answer shows the document
as it was when the answer was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.urls import reverse

from citations.places import places_of
from citations.web.pdf_pages import Box, page_highlights
from citations.web.rendering import Line, Range, markdown_lines
from documents.models import Chunk, DocumentMarkdown, File, Location, SourceBoxes

CONTEXT_LINES = 30


@dataclass(frozen=True)
class PageView:
    number: int
    image_url: str
    width: float
    height: float
    boxes: list[Box]
    claim_boxes: list[Box]


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

    @property
    def page_numbers(self) -> list[int]:
        return sorted({loc.page_number for loc in self.locations if loc.page_number})


def unit_of(kind: str) -> str:
    return "slide" if kind == "pptx" else "page"


def anchor_of(*, kind: str, page: int | None, line: int) -> str:
    """The fragment a link to the viewer scrolls to: the page image or the first line."""
    return f"page-{page}" if kind == "pdf" and page else f"L{line}"


def source_view(*, chunk: Chunk, claims: Sequence[Range], whole: bool) -> SourceView:
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
        pages=_pages(chunk.file, markdown, locations, marks),
        lines=lines,
        whole=whole or (first == 1 and last == total),
        total_lines=total,
        anchor=anchor_of(
            kind=chunk.file.kind,
            page=first_place.page if first_place else chunk.page_start,
            line=first_place.line if first_place else chunk.line_number_start,
        ),
        hierarchy=list(first_place.hierarchy) if first_place else chunk.hierarchy,
    )


def _pages(
    file: File, markdown: DocumentMarkdown, locations: list[Location], marks: list[Range]
) -> list[PageView]:
    numbers = sorted({loc.page_number for loc in locations if loc.page_number and loc.boxes})
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
