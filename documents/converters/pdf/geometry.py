"""Boxes on a PDF page: PDF points, PyMuPDF's top-left origin (y grows downwards)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Box:
    """A rectangle on a page: ``x0`` left, ``y0`` top, ``x1`` right, ``y1`` bottom."""

    x0: float
    y0: float
    x1: float
    y1: float

    @classmethod
    def of(cls, rect: Sequence[float]) -> Box:
        """From PyMuPDF's ``(x0, y0, x1, y1)``: a span's ``bbox``, a ``Rect``."""
        x0, y0, x1, y1 = rect
        return cls(x0, y0, x1, y1)

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def centre_x(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def centre_y(self) -> float:
        return (self.y0 + self.y1) / 2

    def as_tuple(self) -> tuple[float, float, float, float]:
        """The box as PyMuPDF (a clip) and the Markdown builder's spans take it."""
        return (self.x0, self.y0, self.x1, self.y1)


def union(boxes: Sequence[Box]) -> Box:
    """The smallest box around ``boxes`` (not empty), in one pass: this runs for
    every line of every page."""
    first = boxes[0]
    x0, y0, x1, y1 = first.x0, first.y0, first.x1, first.y1
    for box in boxes:
        if box.x0 < x0:
            x0 = box.x0
        if box.y0 < y0:
            y0 = box.y0
        if box.x1 > x1:
            x1 = box.x1
        if box.y1 > y1:
            y1 = box.y1
    return Box(x0, y0, x1, y1)


def rects_union(rects: Sequence[Sequence[float]]) -> Box:
    """The box around PyMuPDF rectangles (the ``bbox`` of a line's spans), without
    making a ``Box`` of each."""
    x0, y0, x1, y1 = rects[0]
    for rect in rects:
        left, top, right, bottom = rect
        if left < x0:
            x0 = left
        if top < y0:
            y0 = top
        if right > x1:
            x1 = right
        if bottom > y1:
            y1 = bottom
    return Box(x0, y0, x1, y1)
