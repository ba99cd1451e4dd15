"""A PDF's reviewer notes: the text of its annotations, which no page draws.

A sticky note, a highlight's comment or an ink mark's note lives in the
annotation's ``Contents``, shown in a pop-up, never in the page's text. As a
DOCX's comments are, they are written after the body in a ``# Comments``
section, one line per annotation on its page, boxed where the annotation sits
(a highlight: the text it marks, quoted as its anchor). Annotations whose text
the page draws itself (free text, form fields) or that carry none (links,
pop-ups, which repeat their parent's note) are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pymupdf

from documents.converters._mdbuild import clean_inline
from documents.converters.pdf.geometry import Box
from documents.converters.pdf.thresholds import ANCHOR_CHARS, MAX_NOTE_CHARS

# PDF subtype -> what the line calls it
_KINDS = {
    "Text": "note",
    "Highlight": "highlight",
    "Underline": "underline",
    "StrikeOut": "strike-out",
    "Squiggly": "squiggly underline",
    "Ink": "ink mark",
    "Square": "box",
    "Circle": "circle",
    "Line": "line",
    "Polygon": "shape",
    "PolyLine": "shape",
    "Stamp": "stamp",
    "Caret": "insertion mark",
    "FileAttachment": "attachment",
    "Sound": "sound",
}
_MARKUP = frozenset({"Highlight", "Underline", "StrikeOut", "Squiggly"})
_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?")


@dataclass(frozen=True)
class Note:
    """One annotation's note as a Markdown line, on its page, boxed where it sits."""

    page_number: int
    text: str  # the whole Markdown line
    box: Box


def page_notes(page: pymupdf.Page, budget: int) -> list[Note]:
    """The notes of one page, at most ``budget`` of them, in the page's order."""
    notes: list[Note] = []
    annotation = page.first_annot
    while annotation is not None and len(notes) < budget:
        note = _note(page, annotation)
        if note is not None:
            notes.append(note)
        annotation = annotation.next
    return notes


def _note(page: pymupdf.Page, annotation: pymupdf.Annot) -> Note | None:
    """The note of one annotation; None for a kind no note is taken from, or an
    empty note."""
    subtype = annotation.type[1]
    kind = _KINDS.get(subtype)
    info = annotation.info
    text = clean_inline((info.get("content") or "")[:MAX_NOTE_CHARS])
    if kind is None or not text:
        return None
    box, anchor = _place(page, annotation, subtype)
    who = clean_inline(info.get("title") or "") or "unknown author"
    date = _date(info.get("modDate") or info.get("creationDate") or "")
    line = f"- {who}{f', {date}' if date else ''}, {kind}"
    if anchor:
        if len(anchor) > ANCHOR_CHARS:
            anchor = anchor[:ANCHOR_CHARS].rsplit(" ", 1)[0] + "…"
        line += f" on “{anchor}”"
    return Note(page.number + 1, f"{line}: {text}", Box(box.x0, box.y0, box.x1, box.y1))


def _place(page: pymupdf.Page, annotation: pymupdf.Annot, subtype: str) -> tuple[pymupdf.Rect, str]:
    """Where the note is boxed, kept on the page, and the text it marks (a
    highlight's, quoted as its anchor; "" for other kinds)."""
    box = annotation.rect
    anchor = ""
    marked = _marked(annotation) if subtype in _MARKUP else []
    if marked:
        box = marked[0]
        for rect in marked[1:]:
            box |= rect
        anchor = clean_inline(" ".join(page.get_textbox(rect) for rect in marked))
    box &= page.rect  # an annotation may reach past the page; its box stays on it
    if box.is_empty:
        box = pymupdf.Rect(annotation.rect.tl, annotation.rect.tl) & page.rect
    return box, anchor


def _marked(annotation: pymupdf.Annot) -> list[pymupdf.Rect]:
    """The rectangles of the text a highlight (underline, strike-out) marks."""
    points = annotation.vertices or []
    rects = []
    for start in range(0, len(points) - 3, 4):
        try:
            rects.append(pymupdf.Quad(points[start : start + 4]).rect)
        except (TypeError, ValueError):  # a malformed QuadPoints entry
            continue
    return [rect for rect in rects if not rect.is_empty]


def _date(value: str) -> str:
    """``D:19900428…`` as ``1990-04-28``; "" when it is no PDF date."""
    match = _PDF_DATE.match(value)
    if not match:
        return ""
    return "-".join(part for part in match.groups() if part)
