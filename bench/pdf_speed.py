"""Measure PDF conversion pages/s: each corpus PDF repeated to >= 100 pages,
converted after a warm-up in ``ROUNDS`` timed rounds (median and slowest shown).

Usage: python bench/pdf_speed.py [corpus-relative PDF ...]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"
# a shared 2-core VM varies by 20-30 % from run to run: the median of a few rounds
ROUNDS = 5
DEFAULT = [
    "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf",
    "markitdown/test_files/test.pdf",
    "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",
    "py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf",
    "docling/pdf/code_and_formula.pdf",
]


def repeated(path: Path, pages: int = 100) -> bytes:
    src = pymupdf.open(path)
    out = pymupdf.open()
    while out.page_count < pages:
        out.insert_pdf(src)
    return out.tobytes()


def main(names: list[str]) -> None:
    from documents.converters.pdf import PdfConverter

    converter = PdfConverter()
    for name in names or DEFAULT:
        data = repeated(CORPUS / name)
        converter.convert(data)  # warm-up
        times = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            result = converter.convert(data)
            times.append(time.perf_counter() - start)
        elapsed = statistics.median(times)
        print(
            f"{name:70s} {result.page_count:4d} pages {elapsed:6.2f} s "
            f"{result.page_count / elapsed:7.1f} pages/s (median of {ROUNDS}; "
            f"slowest {result.page_count / max(times):.1f})"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
