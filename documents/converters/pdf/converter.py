"""The PDF converter: the passes run over a document, page by page.

Reading a page's text and layout is most of a page's work, so it is done once
for every page first (the extract pass); what the whole document decides
(heading levels, running headers, line-end hyphens, whether fixed-width text is
code) is then known when each page's blocks, groups and Markdown are made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from documents.converters._hyphenation import LineEndHyphens
from documents.converters._mdbuild import MarkdownBuilder
from documents.converters.base import Conversion, ConversionError, ProgressReport, SourceSpan
from documents.converters.pdf.annotations import Note, page_notes
from documents.converters.pdf.blocks import page_blocks
from documents.converters.pdf.budget import DecodeBudget
from documents.converters.pdf.cells import CellWords
from documents.converters.pdf.extract import PageText, Superscript, extract_page
from documents.converters.pdf.furniture import drop_furniture, furniture_keys
from documents.converters.pdf.groups import (
    Group,
    GroupKind,
    carries_on,
    listings_stand_out,
    open_ended,
    page_groups,
)
from documents.converters.pdf.headings import Headings
from documents.converters.pdf.lines import Block
from documents.converters.pdf.markdown import code_write, comments_write, table_write, text_write
from documents.converters.pdf.mupdf_version import mupdf_require
from documents.converters.pdf.thresholds import MAX_ANNOTATIONS

pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)

NO_TEXT_IMAGES = "no text layer: this PDF contains only images; OCR is not supported yet"
NO_TEXT_EMPTY = "no text layer: this PDF has no text to extract"
# MuPDF's failed allocation, as PyMuPDF raises it: "code=2: malloc (N bytes) failed"
_MUPDF_NO_MEMORY = re.compile(r"\b(?:m|re|c)alloc \(\d+ bytes\) failed|out of memory", re.I)
# progress: reading a page counts for three quarters of its work, writing it the rest
_READ_SHARE, _SHARES = 3, 4


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is memory running out (Python's or MuPDF's): a resource limit,
    never a damaged page or file, so no ``except Exception`` may take it for one."""
    return isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and bool(_MUPDF_NO_MEMORY.search(str(exc)))
    )


def _open(data: bytes) -> pymupdf.Document:
    """The document; ``ConversionError`` with the reason users see if it cannot be read."""
    if not data:
        raise ConversionError("could not read this PDF: the file is empty")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # mupdf raises several types for damaged input
        if out_of_memory(exc):
            raise
        raise ConversionError(
            f"could not read this PDF: not a PDF file or damaged beyond repair ({exc})"
        ) from exc
    if doc.needs_pass:
        doc.close()
        raise ConversionError("this PDF is encrypted: a password is required to open it")
    if doc.page_count == 0:
        doc.close()
        raise ConversionError("could not read this PDF: it has no readable pages (damaged file)")
    return doc


def _silent(done: int, total: int) -> None:
    """No one asked for progress."""


def _clean_meta(value: object) -> str:
    """A metadata value as printable text (a hostile file may put anything there)."""
    return "".join(ch for ch in str(value or "") if ch.isprintable()).strip()


def _page_notes(page: pymupdf.Page, budget: int) -> list[Note]:
    """The page's annotation notes (``annotations``); none if they are damaged."""
    try:
        return page_notes(page, budget) if budget > 0 else []
    except Exception as exc:  # damaged annotations: the page's are left out
        if out_of_memory(exc):
            raise
        return []


@dataclass
class _Read:
    """The extract pass over every page: what later passes work on."""

    pages: list[list[Block]] = field(default_factory=list)
    superscripts: list[list[Superscript]] = field(default_factory=list)
    heights: list[float] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)  # pages that could not be read
    hidden: int = 0  # lines of invisible text dropped
    images: int = 0  # pages that list images

    def page_add(self, page: pymupdf.Page) -> None:
        """Read one page; a page that cannot be parsed is recorded as failed, empty."""
        try:
            drawn = bool(page.get_images())
            text = extract_page(page, drawn)
            self.images += drawn
        except Exception as exc:  # a damaged page: the others are still read
            if out_of_memory(exc):
                raise
            text = PageText([], 0, [])
            self.failed.append(page.number + 1)
        self.pages.append(text.blocks)
        self.superscripts.append(text.superscripts)
        if page.number + 1 not in self.failed:  # read while the page is loaded
            self.notes += _page_notes(page, MAX_ANNOTATIONS - len(self.notes))
        self.heights.append(page.rect.height)
        self.hidden += text.hidden

    def text_check(self, page_count: int) -> None:
        """``ConversionError`` when no page has text: damaged, scanned or empty."""
        if any(ln.text.strip() for blocks in self.pages for b in blocks for ln in b.lines):
            return
        if len(self.failed) == page_count:
            raise ConversionError("could not read this PDF: no page could be parsed (damaged file)")
        raise ConversionError(NO_TEXT_IMAGES if self.images else NO_TEXT_EMPTY)


class _Writer:
    """The passes after extract, page by page, with what the document decided."""

    def __init__(self, doc: pymupdf.Document, read: _Read) -> None:
        self.doc, self.read = doc, read
        self.headings = Headings(doc, read.pages)
        lines = [ln.text for blocks in read.pages for b in blocks for ln in b.lines]
        self.hyphens = LineEndHyphens(lines)
        self.keys = furniture_keys(read.pages, read.heights)
        self.code = listings_stand_out(read.pages)
        self.md = MarkdownBuilder()
        self.furniture = self.tables = self.listings = 0
        # (page, paragraph) cut off at a page's end: its blank line waits until the
        # next page shows whether the paragraph goes on there
        self.cut: tuple[int, Group] | None = None

    def page_write(self, index: int) -> None:
        """Page ``index``: furniture out, blocks in order, groups, Markdown."""
        page_no = index + 1
        blocks = self.read.pages[index]
        self.furniture += drop_furniture(blocks, self.read.heights[index], self.keys)
        page = self.doc[index]
        ordered = page_blocks(page, blocks, readable=page_no not in self.read.failed)
        groups = page_groups(ordered, self.headings.classifier(page_no), self.code)
        continues = self._cut_goes_on(groups)
        words: CellWords | None = None
        for position, group in enumerate(groups):
            if group.kind is GroupKind.TABLE and group.table is not None:
                words = words or CellWords(page, self.read.superscripts[index])
                self.tables += table_write(self.md, words, page_no, group.table)
            elif group.kind is GroupKind.CODE:
                self.listings += 1
                code_write(self.md, page_no, group.lines)
            else:
                first = continues and position == 0
                text_write(self.md, page_no, group, self.hyphens, continues=first)
        if groups and open_ended(groups[-1]):
            self.cut = (page_no, groups[-1])  # no blank yet: the next page may go on with it
        else:
            self.md.blank(page_no)

    def _cut_goes_on(self, groups: list[Group]) -> bool:
        """Whether the paragraph cut at the last page's end goes on in ``groups``;
        if not, it ends there, with its blank line."""
        cut, self.cut = self.cut, None
        if cut is None:
            return False
        if groups and carries_on(cut[1], groups[0]):
            return True
        self.md.blank(cut[0])
        return False

    def finish(self) -> tuple[str, list[int | None], list[SourceSpan]]:
        """The Markdown after the last page: annotation notes at its end."""
        if self.cut is not None:
            self.md.blank(self.cut[0])
        comments_write(self.md, self.read.notes)
        return self.md.build(paged=True)

    def metadata(self) -> dict[str, Any]:
        """The document's own metadata, and what the conversion found and left out."""
        meta: dict[str, Any] = {
            k: _clean_meta(v) for k, v in (self.doc.metadata or {}).items() if _clean_meta(v)
        }
        meta.update(
            outline_entries=self.headings.toc_entries,
            headings_from="outline" if self.headings.use_toc else "font",
            body_font_size=self.headings.body,
            tables=self.tables,
            code_listings=self.listings,
            hidden_text_lines_dropped=self.read.hidden,
            header_footer_lines_dropped=self.furniture,
            pages_failed=self.read.failed,
            comments=len(self.read.notes),
        )
        return meta


class PdfConverter:
    """PDF to Markdown; raises ``ConversionError`` for encrypted, empty, broken or
    oversized files (``budget``: what a page decodes, measured before MuPDF does)."""

    name = "pymupdf-markdown"
    # 1.1: Arabic lam-alef ligatures in logical order; 1.2: pictograph-font markers are
    # bullets, control characters dropped, a bold paragraph's last line is no heading;
    # 1.3: borderless tables (one-line cell blocks aligned in rows and columns);
    # 1.4: a line-end hyphen of a compound ("chat-/optimized") is kept; 1.5: superscripts
    # marked ^…^, a frame around rules of its own is no table, row labels left of a
    # borderless table's column names are its first column, a header over one full row
    # of values is a table, unmapped glyphs (U+FFFD) dropped, annotation notes under
    # "# Comments", a cell merged across part of its row fills each column it covers;
    # 1.6: a paragraph cut at the foot of a column goes on in the next column's text,
    # one cut at a page's end goes on, on the next line, with the next page's text;
    # lines in a fixed-width font (where the body is not) are fenced code, line by line;
    # 1.7: a line back at the edge after a hanging indent starts a paragraph, notes in
    # smaller type under a borderless table's row stay in the table, wrapped lines of
    # right-to-left text are one paragraph, "Page n of m" near the top or foot and facing
    # pages' numbers in a margin are furniture, a title and small print far apart on
    # one row stay two lines, a block set a sentence per line keeps its lines apart;
    # 1.8: borderless label/value forms are two-column tables, a row a line, forms side
    # by side (from different rows) two tables, a value's wrapped lines in its row
    version = "1.8.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        """The conversion; ``ConversionError`` for a file refused, ``MemoryError`` when
        memory ran out (MuPDF's too: the sandbox reports the memory limit)."""
        mupdf_require()  # no hostile file for a MuPDF with known flaws
        try:
            doc = _open(data)
            try:
                return self._convert(doc, progress or _silent)
            finally:
                doc.close()
        except RuntimeError as exc:
            if out_of_memory(exc):
                raise MemoryError(str(exc)) from exc
            raise

    def _convert(self, doc: pymupdf.Document, progress: ProgressReport) -> Conversion:
        """Extract every page, then write each; ``progress`` hears of both passes."""
        total = doc.page_count
        read, budget = _Read(), DecodeBudget(doc)
        for index in range(total):
            budget.page_check(index)  # before MuPDF decodes what the page holds
            read.page_add(doc[index])
            progress(_READ_SHARE * len(read.pages) // _SHARES, total)
        read.text_check(total)
        writer = _Writer(doc, read)
        for index in range(len(read.pages)):
            writer.page_write(index)
            progress((_READ_SHARE * total + index + 1) // _SHARES, total)
        markdown, line_pages, spans = writer.finish()
        return Conversion(
            markdown=markdown,
            converter=self.name,
            converter_version=self.version,
            line_pages=line_pages,
            spans=spans,
            page_count=doc.page_count,
            metadata=writer.metadata(),
        )
