"""Before a page is read: how much it makes MuPDF decode, against the caps.

A page's text comes from its content streams and what they draw: forms, Type3
glyph procedures, tiling patterns (*content*, interpreted), and fonts, colour
profiles and CMaps (*data*, held whole). Every stream the page reaches from its
``/Contents`` and its (inherited) ``/Resources`` is measured (``decoded``), once
per document, images aside; a page over ``MAX_PAGE_CONTENT_BYTES`` of content, a
stream over ``MAX_STREAM_BYTES`` or a document over ``MAX_DOCUMENT_DECODED_BYTES``
is refused with a ``ConversionError`` that names the limit, before MuPDF decodes it.
Links that lead away from the page (its parent, annotations, actions, the outline)
are not followed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pymupdf
from pymupdf import mupdf

from documents.converters.base import ConversionError
from documents.converters.pdf.decoded import decoded_length
from documents.converters.pdf.thresholds import (
    MAX_DOCUMENT_DECODED_BYTES,
    MAX_PAGE_CONTENT_BYTES,
    MAX_STREAM_BYTES,
    MIB,
)

CONTENT_KEYS = frozenset({"Contents", "CharProcs"})  # their streams are run as content
# keys that lead to other pages or the document, not to what this page draws
AWAY_KEYS = frozenset(
    {"Parent", "P", "Annots", "B", "A", "AA", "Dest", "Next", "Prev", "First", "Last"}
    | {"Popup", "IRT", "Thumb", "Metadata", "PieceInfo", "StructParent", "StructParents"}
)


def _mb(count: int) -> str:
    return f"{count // MIB} MB"


@dataclass
class _Stream:
    size: int  # decoded, capped at MAX_STREAM_BYTES + 1
    image: bool
    form: bool  # a form XObject or tiling pattern: content wherever it is reached


@dataclass
class DecodeBudget:
    """The document's measured streams and the bytes they decode to, so far."""

    doc: pymupdf.Document
    streams: dict[int, _Stream] = field(default_factory=dict)
    spent: int = 0  # decoded bytes of every stream measured, each once
    shared: dict[int, int] = field(default_factory=dict)  # resources object: content bytes

    def __post_init__(self) -> None:
        self.pdf = mupdf.pdf_specifics(self.doc.this)

    def page_check(self, index: int) -> None:
        """``ConversionError`` naming the limit page ``index`` (0-based) goes past."""
        page = mupdf.pdf_lookup_page_obj(self.pdf, index)
        content = _Walk(self).run(
            mupdf.pdf_dict_get(page, mupdf.pdf_new_name("Contents")), content=True
        )
        content += self._resources_content(
            mupdf.pdf_dict_get_inheritable(page, mupdf.pdf_new_name("Resources"))
        )
        if content > MAX_PAGE_CONTENT_BYTES:
            raise ConversionError(
                f"this PDF is too large to convert: page {index + 1} decodes to more than "
                f"{_mb(MAX_PAGE_CONTENT_BYTES)} of content (the limit per page)"
            )

    def _resources_content(self, resources: mupdf.PdfObj) -> int:
        """The content bytes a page's resources hold (forms, glyphs, patterns): walked
        once for all the pages that share one resources object."""
        if not mupdf.pdf_is_indirect(resources):
            return _Walk(self).run(resources, content=False)
        number = mupdf.pdf_to_num(resources)
        if number not in self.shared:
            self.shared[number] = _Walk(self).run(resources, content=False)
        return self.shared[number]

    def stream(self, number: int, obj: mupdf.PdfObj) -> _Stream:
        """Stream ``number`` measured (once per document), the document's total checked."""
        if number in self.streams:
            return self.streams[number]
        subtype = _name(mupdf.pdf_dict_get(obj, mupdf.pdf_new_name("Subtype")))
        pattern = mupdf.pdf_to_int(mupdf.pdf_dict_get(obj, mupdf.pdf_new_name("PatternType")))
        image = subtype == "Image"
        size = 0 if image else self._measure(number, obj)
        self.streams[number] = _Stream(size, image, form=subtype == "Form" or pattern == 1)
        self.spent += size
        if self.spent > MAX_DOCUMENT_DECODED_BYTES:
            raise ConversionError(
                f"this PDF is too large to convert: it decodes to more than "
                f"{_mb(MAX_DOCUMENT_DECODED_BYTES)} (the limit per document)"
            )
        return self.streams[number]

    def _measure(self, number: int, obj: mupdf.PdfObj) -> int:
        try:
            raw = self.doc.xref_stream_raw(number)
        except Exception:  # unreadable: MuPDF will not decode it either
            return 0
        return decoded_length(raw or b"", _filters(obj), MAX_STREAM_BYTES)


class _Walk:
    """One walk over the objects reached from a page's contents or resources;
    ``content``: the bytes of content streams among them. A stack, not recursion:
    a hostile file may nest objects deeper than Python's recursion limit."""

    def __init__(self, budget: DecodeBudget) -> None:
        self.budget = budget
        self.seen: set[int] = set()
        self.content = 0

    def run(self, start: mupdf.PdfObj, *, content: bool) -> int:
        """The content bytes reached from ``start`` (not seen before on this walk)."""
        before, stack = self.content, [(start, content)]
        while stack:
            obj, content = stack.pop()
            if mupdf.pdf_is_indirect(obj):
                number = mupdf.pdf_to_num(obj)
                if number in self.seen:
                    continue
                self.seen.add(number)
                if mupdf.pdf_is_stream(obj):
                    measured = self.budget.stream(number, obj)
                    if content or measured.form:
                        self.content += measured.size  # the page's cap judges it
                    elif measured.size > MAX_STREAM_BYTES:
                        raise ConversionError(
                            "this PDF is too large to convert: a font, colour profile or "
                            f"other stream decodes to more than {_mb(MAX_STREAM_BYTES)} "
                            "(the limit per stream)"
                        )
                    content = False  # a stream's own keys (its resources) are no content
            stack.extend(_children(obj, content))
        return self.content - before


def _children(obj: mupdf.PdfObj, content: bool) -> list[tuple[mupdf.PdfObj, bool]]:
    """What ``obj`` holds, each with whether it is run as content."""
    if mupdf.pdf_is_array(obj):
        return [(mupdf.pdf_array_get(obj, i), content) for i in range(mupdf.pdf_array_len(obj))]
    if not mupdf.pdf_is_dict(obj):
        return []
    held = []
    for i in range(mupdf.pdf_dict_len(obj)):
        key = _name(mupdf.pdf_dict_get_key(obj, i))
        if key not in AWAY_KEYS:
            held.append((mupdf.pdf_dict_get_val(obj, i), content or key in CONTENT_KEYS))
    return held


def _name(obj: mupdf.PdfObj) -> str:
    return mupdf.pdf_to_name(obj) if mupdf.pdf_is_name(obj) else ""


def _filters(obj: mupdf.PdfObj) -> list[str]:
    """A stream's ``/Filter``: one name or an array of them, in the order applied."""
    value = mupdf.pdf_dict_get(obj, mupdf.pdf_new_name("Filter"))
    if mupdf.pdf_is_array(value):
        return [_name(mupdf.pdf_array_get(value, i)) for i in range(mupdf.pdf_array_len(value))]
    return [_name(value)] if mupdf.pdf_is_name(value) else []
