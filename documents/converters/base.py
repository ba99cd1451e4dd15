"""The contract every converter meets: bytes in, Markdown plus a location map out.

A converter never chunks and never touches the database. It returns the
Markdown it produced and, for every Markdown line, the page it came from, so
that the chunker can later give each chunk exact Locations. PDF converters
also return the boxes of the source text behind each Markdown span.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

# progress(done, total): how many of the document's pages are converted so far
ProgressReport = Callable[[int, int], None]


class ConversionError(Exception):
    """A file that cannot be converted; ``reason`` is shown to the user as is.

    ``permanent``: the same converter refuses these bytes every time (encrypted,
    no text layer, malformed), so retrying cannot help; a time or memory limit
    reached, or a crashed parser, may pass on another try.
    """

    def __init__(self, reason: str, *, permanent: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


@dataclass(frozen=True)
class SourceSpan:
    """Markdown characters ``[char_start, char_end)`` drawn from one box of one page.

    Boxes are in PDF points with PyMuPDF's top-left origin:
    ``(x0, y0, x1, y1)`` as returned by ``page.get_text('dict')``.
    """

    char_start: int
    char_end: int
    page_number: int
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class Conversion:
    """The Markdown of one file revision and where each part of it came from.

    ``line_pages[i]`` is the 1-indexed page (PDF page, PPTX slide, DOCX page)
    of Markdown line ``i + 1``; it is empty for formats without pages.
    ``body_start`` is the offset where chunkable text begins (after Markdown
    front matter), so offsets stay those of the user's file.
    """

    markdown: str
    converter: str
    converter_version: str
    line_pages: list[int | None] = field(default_factory=list)
    spans: list[SourceSpan] = field(default_factory=list)
    body_start: int = 0
    front_matter: str = ""
    page_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["spans"] = [
            [s.char_start, s.char_end, s.page_number, s.x0, s.y0, s.x1, s.y1] for s in self.spans
        ]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Conversion:
        spans = [SourceSpan(*row) for row in data.pop("spans", [])]
        return cls(spans=spans, **data)


class Converter(Protocol):
    """One file kind to Markdown. ``name``/``version`` are recorded per revision.

    ``progress``, if given, is told how many pages are converted as the work goes
    on, by converters whose documents can take long (PDF); the others convert in
    a blink and tell nothing.
    """

    name: str
    version: str

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion: ...
