"""The oldest MuPDF the PDF converter runs on, and why: the one place that says so.

MuPDF parses hostile files; a version with known memory-safety flaws must not. The
minimum is the first release with the latest such flaw fixed:

- CVE-2026-3308 (MuPDF before 1.28.0): an integer overflow of an image's stride in
  ``pdf_load_image_imp`` lets a crafted PDF read and write out of bounds on the heap.
- CVE-2025-46206 (MuPDF 1.25.5 and 1.25.6): cyclic outline ``/Next`` links recurse
  without end (the converter reads the outline for headings).

PyMuPDF embeds its own MuPDF (``pymupdf.VersionFitz``). The Django system check
(``documents.checks``) refuses to start on an older one; the conversion and
page-words children refuse to parse with it (``mupdf_require``), so a child started
by other means fails as clearly.
"""

from __future__ import annotations

import re

import pymupdf

from documents.converters.base import ConversionError

MINIMUM = (1, 28, 0)
WHY = "CVE-2026-3308, a heap overflow in image loading, is fixed from 1.28.0"


def mupdf_version() -> str:
    """The version of the MuPDF that PyMuPDF embeds, e.g. ``"1.28.5"``."""
    return str(pymupdf.VersionFitz)


def mupdf_too_old(version: str) -> str | None:
    """Why ``version`` may not parse uploads, or ``None`` when it may."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:3])
    if numbers >= MINIMUM:
        return None
    minimum = ".".join(map(str, MINIMUM))
    return (
        f"MuPDF {version} (PyMuPDF's) is older than {minimum}, the oldest allowed to "
        f"parse uploads: {WHY}; upgrade PyMuPDF"
    )


def mupdf_require() -> None:
    """``ConversionError`` (worth a retry once the operator upgrades) on a MuPDF too old."""
    problem = mupdf_too_old(mupdf_version())
    if problem is not None:
        raise ConversionError(
            f"this server cannot read PDF files safely: {problem}", permanent=False
        )
