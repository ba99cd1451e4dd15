"""Provenance invariants 1, 2 and 3 on every real document of the shared corpus.

For each PDF, DOCX, PPTX, Markdown, JSON and HTML file of ``../shared/corpus``
(hostile files, ground truths and expected outputs aside) the production path
runs in-process: sniff → converter → ``MarkdownStructure`` → ``chunk_markdown``
→ ``Locator.locate``. Every chunk is then checked against facts recomputed
independently of that code:

1. ``markdown[char_start:char_end] == chunk text``, the locations partition the
   chunk, and their line numbers are exactly the lines they cover;
2. PDF: the words of every location are read back from the ORIGINAL PDF with
   PyMuPDF inside the union of the location's boxes on the location's page;
   PPTX: the words are read back from the named slide with python-pptx;
   DOCX: the page of each location agrees with Word's rendered page breaks
   (``python-docx/par-rendered-page-breaks.docx``, facts from MANIFEST.tsv);
3. ``hierarchy`` is the chain of Markdown headings in force at ``char_start``
   (``tests.support.invariants.headings_in_force``).

A per-format summary (files, chunks, verified word rate) is written to the
terminal at the end of the module.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import io
import json
import re
import unicodedata
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pymupdf
import pytest
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.shapes.autoshape import Shape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.shapes.picture import Picture

from documents.chunking import ChunkSpan, chunk_markdown
from documents.converters import ConversionError, converter_for
from documents.locating import LocationDraft, Locator
from documents.markdown_structure import MarkdownStructure
from documents.models import Chunk, Location
from documents.sniffing import sniff
from documents.word_boxes import DocumentWords
from tests.support.corpus import CORPUS, nonempty
from tests.support.invariants import assert_chunk_invariants, headings_in_force

if TYPE_CHECKING:
    from pptx.chart.chart import Chart
    from pptx.shapes.base import BaseShape


FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".md": "markdown",
    ".json": "json",
    ".html": "html",
}
EXCLUDED_DIRS = {"hostile", "groundtruth", "expected_outputs"}
SCAN = "markitdown/test_files/MEDRPT-2024-PAT-3847_medical_report_scan.pdf"
PAGE_BREAKS_DOCX = "python-docx/par-rendered-page-breaks.docx"
TARGET, OVERLAP = 200, 32
MIN_WORD_RATE = 0.95
# headings_in_force re-parses the whole Markdown per call; above this size the
# test checks it on a sample and uses an equivalent single-pass index for the rest
FULL_HEADING_CHECK_CHARS = 100_000

CORPUS_FILES = nonempty(
    sorted(
        p.relative_to(CORPUS).as_posix()
        for p in CORPUS.rglob("*")
        if p.is_file()
        and p.suffix.lower() in FORMATS
        and not EXCLUDED_DIRS.intersection(p.relative_to(CORPUS).parts)
    ),
    "corpus files of a converted format",
)


def _case_id(name: str) -> str:
    return f"{FORMATS[Path(name).suffix.lower()]}:{name}"


# --- per-format summary ----------------------------------------------------------------


@dataclass
class _Tally:
    files: int = 0
    chunks: int = 0
    locations: int = 0
    words: int = 0
    verified: int = 0
    misses: list[str] = field(default_factory=list)


_SUMMARY: dict[str, _Tally] = defaultdict(_Tally)


@pytest.fixture(scope="module", autouse=True)
def _print_summary(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["", "provenance corpus summary (format: files, chunks, locations, verified words)"]
    for kind in sorted(_SUMMARY):
        t = _SUMMARY[kind]
        rate = f"{t.verified}/{t.words} = {t.verified / t.words:.4%}" if t.words else "n/a"
        lines.append(
            f"  {kind:9} files={t.files:3} chunks={t.chunks:5} locations={t.locations:5} "
            f"words verified in source: {rate}"
        )
        if t.misses:
            lines.append(f"            unverified words (first 20): {t.misses[:20]}")
    text = "\n".join(lines)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None and reporter is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(text)
    else:  # pragma: no cover - without the capture/terminal plugins
        print(text)


# --- independent normalisation of words --------------------------------------------------


def _normalise(text: str) -> str:
    """NFKC (ligatures), combining marks dropped, every non-word character a separator."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("M"))
    return re.sub(r"[\W_]+", " ", text)


def words_of(text: str) -> list[str]:
    """Words a person would search for: Markdown syntax and punctuation gone, >= 3 chars."""
    return [w for w in _normalise(text).split() if len(w) >= 3]


_LAM_ALEF_VISUAL = re.compile("([\u0622\u0623\u0625\u0627\u0671])\u0644")


def _lam_alef_readings(word: str) -> set[str]:
    """The word with every subset of its alef-lam pairs swapped: which pairs were a
    ligature (and came out reversed) and which are real (the article "ال") cannot be
    told from the text."""
    readings = {word}
    for match in list(_LAM_ALEF_VISUAL.finditer(word))[:6]:
        at = match.start()
        readings |= {r[:at] + r[at + 1] + r[at] + r[at + 2 :] for r in readings}
    return readings


class _Haystack:
    """Words read from the source; a word also counts when it is a contiguous run of
    the source text with separators removed (words the converter de-hyphenated
    across a line end, or glued in right-to-left text). Source words are also read
    with each lam-alef ligature's letters swapped, since MuPDF gives them in visual
    order ("اإل") and the converter in logical order ("الإ")."""

    def __init__(self, texts: list[str]) -> None:
        normalised = [_normalise(t) for t in texts]
        self.words = {v for t in normalised for w in t.split() for v in _lam_alef_readings(w)}
        self.joined = "".join("".join(t.split()) for t in normalised)

    def __contains__(self, word: str) -> bool:
        return word in self.words or word in self.joined


# --- invariant 1 and 3, recomputed independently -----------------------------------------


class _Lines:
    """1-indexed line of an offset, from the newline positions of the Markdown."""

    def __init__(self, markdown: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", markdown)]

    def of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


class _Headings:
    """Heading chains in force, computed once per document.

    For documents up to ``FULL_HEADING_CHECK_CHARS`` every lookup is
    ``headings_in_force`` itself; beyond that, a single-pass index built from
    ``headings_in_force`` at each heading start is used (and it is checked against
    ``headings_in_force`` on a sample of offsets by the caller)."""

    def __init__(self, markdown: str, body_start: int) -> None:
        self.markdown, self.body_start = markdown, body_start
        self.full = len(markdown) <= FULL_HEADING_CHECK_CHARS
        self._index: tuple[list[int], list[list[str]]] | None = None

    def at(self, offset: int) -> list[str]:
        if self.full:
            return headings_in_force(self.markdown, offset, self.body_start)
        starts, chains = self._build()
        position = bisect.bisect_right(starts, offset)
        return chains[position - 1] if position else []

    def _build(self) -> tuple[list[int], list[list[str]]]:
        if self._index is None:
            from tests.support.invariants import _PARSER

            md, body = self.markdown, self.body_start
            lines = _Lines(md)
            first_line = md.count("\n", 0, body)
            starts: list[int] = []
            chains: list[list[str]] = []
            stack: list[tuple[int, str]] = []
            tokens = _PARSER.parse(md[body:])
            for index, token in enumerate(tokens):
                if token.type != "heading_open" or token.level != 0:
                    continue
                assert token.map is not None  # a heading token always has its lines
                start = lines.starts[token.map[0] + first_line]
                start += len(md[start : start + 64]) - len(md[start : start + 64].lstrip(" \t"))
                level = int(token.tag[1])
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, " ".join(tokens[index + 1].content.split())))
                starts.append(start)
                chains.append([text for _, text in stack])
            self._index = (starts, chains)
        return self._index


def assert_invariants_1_and_3(
    markdown: str,
    body_start: int,
    span: ChunkSpan | Chunk,
    drafts: Sequence[LocationDraft | Location],
    lines: _Lines,
    *,
    headings: _Headings,
) -> str:
    text = markdown[span.char_start : span.char_end]
    assert text.strip(), f"empty chunk at {span.char_start}"
    assert span.char_start >= body_start, "a chunk starts inside the front matter"
    assert drafts, f"chunk {span.char_start}-{span.char_end} has no location"
    # the locations partition [char_start, char_end) in order, without gaps or overlaps
    assert drafts[0].char_start == span.char_start
    assert drafts[-1].char_end == span.char_end
    for before, after in zip(drafts, drafts[1:], strict=False):
        assert before.char_end == after.char_start, "locations do not partition the chunk"
    assert "".join(markdown[d.char_start : d.char_end] for d in drafts) == text
    for d in drafts:
        assert d.char_start < d.char_end, f"empty location {d}"
        first, last = lines.of(d.char_start), lines.of(d.char_end - 1)
        assert (d.line_number_start, d.line_number_end) == (first, last), (
            f"location {d.char_start}-{d.char_end}: lines {d.line_number_start}-"
            f"{d.line_number_end}, the span covers {first}-{last}"
        )
        # invariant 3
        assert d.hierarchy == headings.at(d.char_start), (
            f"hierarchy at {d.char_start}: got {d.hierarchy}, "
            f"headings in force {headings.at(d.char_start)}"
        )
        # and it holds to the location's end: a chunk taking in two sections has a
        # location for each, so every sentence's section can be told exactly
        assert headings.at(d.char_end - 1) == d.hierarchy, (
            f"location {d.char_start}-{d.char_end} spans two sections"
        )
    # The shared helper too, where it fits: its check that a location's text lies
    # within "\n".join(its lines) cannot hold for a location ending with the newline
    # of its last line, which every location but the last of a chunk spanning a page
    # break does (the cut is at the start of the next page's line).
    if headings.full and not any(markdown[d.char_end - 1] == "\n" for d in drafts):
        chunk = SimpleNamespace(
            char_start=span.char_start,
            char_end=span.char_end,
            chunk_text=text,
            hierarchy=drafts[0].hierarchy,
        )
        assert_chunk_invariants(markdown, chunk, drafts, body_start)
    return text


# --- invariant 2: independent readers of the original files -------------------------------


def _inflated_union(boxes: list[list[float]], margin: float = 2.0) -> pymupdf.Rect:
    return pymupdf.Rect(
        min(b[0] for b in boxes) - margin,
        min(b[1] for b in boxes) - margin,
        max(b[2] for b in boxes) + margin,
        max(b[3] for b in boxes) + margin,
    )


def _clip_words(page: pymupdf.Page, rect: pymupdf.Rect) -> list[str]:
    return [w[4] for w in page.get_text("words", clip=rect, sort=False)]


def _pptx_slide_texts(data: bytes) -> list[list[str]]:
    """Everything readable on each slide, read with python-pptx independently of the
    converter: text frames, tables, chart titles and data, picture alt text and names,
    group members, speaker notes."""
    prs = Presentation(io.BytesIO(data))
    slides: list[list[str]] = []

    def walk(shapes: Iterable[BaseShape], out: list[str]) -> None:
        for shape in shapes:
            out.append(shape.name or "")
            for el in shape._element.iter():
                if isinstance(el.tag, str) and el.tag.endswith("}cNvPr"):
                    out.append(el.get("descr") or "")
            if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                assert isinstance(shape, GroupShape), shape
                walk(shape.shapes, out)
            if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                assert isinstance(shape, Shape), shape  # the one kind with a text frame
                out.append(shape.text_frame.text)
                for paragraph in shape.text_frame.paragraphs:  # link addresses
                    for run in paragraph.runs:
                        with contextlib.suppress(Exception):
                            out.append(run.hyperlink.address or "")
            if getattr(shape, "has_table", False) and shape.has_table:
                assert isinstance(shape, GraphicFrame), shape
                out.extend(cell.text for row in shape.table.rows for cell in row.cells)
            if getattr(shape, "has_chart", False) and shape.has_chart:
                assert isinstance(shape, GraphicFrame), shape
                out.extend(_pptx_chart_texts(shape.chart))
            if isinstance(shape, Picture):
                with contextlib.suppress(Exception):  # no image part
                    out.append(shape.image.ext)

    archive = zipfile.ZipFile(io.BytesIO(data))
    for slide in prs.slides:
        texts = ["Slide", "Notes", "Chart", "Comments", "Reply", "by"]  # the converter's labels
        walk(slide.shapes, texts)
        if slide.has_notes_slide:
            walk(slide.notes_slide.shapes, texts)
        texts += _pptx_comment_texts(archive, str(slide.part.partname).lstrip("/"))
        slides.append(texts)
    return slides


def _pptx_chart_texts(chart: Chart) -> list[str]:
    """A chart's title, categories, series names and values."""
    out: list[str] = []
    if chart.has_title and chart.chart_title.has_text_frame:
        out.append(chart.chart_title.text_frame.text)
    for plot in chart.plots:
        out.extend(str(c) for c in plot.categories)
        for series in plot.series:
            out.append(series.name or "")
            out.extend(f"{v:g}" for v in series.values if v is not None)
    return out


def _pptx_comment_texts(archive: zipfile.ZipFile, slide_name: str) -> list[str]:
    """Author names, initials, dates and texts of a slide's reviewer comments, read
    from the package's XML with the standard library (python-pptx has no comments)."""
    import posixpath
    import xml.etree.ElementTree as ET

    folder, name = posixpath.split(slide_name)
    rels_name = f"{folder}/_rels/{name}.rels"
    if rels_name not in archive.namelist():
        return []
    out: list[str] = []
    for author_list in ("ppt/commentAuthors.xml", "ppt/authors.xml"):
        if author_list in archive.namelist():
            for element in ET.fromstring(archive.read(author_list)).iter():
                out += [element.get("name") or "", element.get("initials") or ""]
    for rel in ET.fromstring(archive.read(rels_name)):
        if rel.get("Type", "").endswith("/comments"):
            target = posixpath.normpath(posixpath.join(folder, rel.get("Target", "")))
            for element in ET.fromstring(archive.read(target)).iter():
                out += [element.text or "", element.get("dt") or "", element.get("created") or ""]
    return out


def _document_texts(kind: str, data: bytes) -> list[str]:
    """The text of a page-less document read straight from the original bytes
    (document-level check: the chunk's words come from the file, nothing invented)."""
    if kind == "markdown":
        return [data.decode("utf-8")]
    if kind == "html":
        from bs4 import BeautifulSoup

        return [BeautifulSoup(data, "html.parser").get_text(" ")]
    if kind == "json":
        return _json_texts(data)
    return _docx_texts(data)


def _json_texts(data: bytes) -> list[str]:
    """Every key and value of a JSON document, as text."""
    out: list[str] = ["empty list"]  # the converter's label for []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                out.append(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        else:
            out.append(value if isinstance(value, str) else json.dumps(value))

    walk(json.loads(data.decode("utf-8-sig")))
    return out


def _docx_texts(data: bytes) -> list[str]:
    """Every text node and every picture description of every XML part of a DOCX."""
    from lxml import etree

    out: list[str] = []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".xml"):
                continue
            root = etree.fromstring(archive.read(info), etree.XMLParser(resolve_entities=False))
            for el in root.iter():
                if not isinstance(el.tag, str):
                    continue
                if el.tag.endswith("}t") and el.text:
                    out.append(el.text)
                elif el.tag.endswith("}docPr"):
                    out.extend([el.get("descr") or "", el.get("name") or ""])
                elif el.tag.endswith("}comment"):  # who commented and when
                    out.extend(v for k, v in el.attrib.items() if k.endswith(_COMMENT_FACTS))
        for info in archive.infolist():  # external link targets, written as [text](url)
            if not info.filename.endswith(".rels"):
                continue
            for rel in etree.fromstring(archive.read(info)):
                if (rel.get("Type") or "").endswith("/hyperlink"):
                    out.append(rel.get("Target") or "")
    # the converter's own words for the notes' sections and comment lines
    return [" ".join(out), "image", "Footnotes Endnotes Comments Reply by on unknown author"]


_COMMENT_FACTS = ("}author", "}initials", "}date")


def _pdf_annotations(page: pymupdf.Page) -> list[tuple[pymupdf.Rect, str]]:
    """Each annotation's area on the page (its rectangle, and a highlight's marked
    quads) with its note, author and the text it marks, read with PyMuPDF."""
    out = []
    annotation = page.first_annot
    while annotation is not None:
        info = annotation.info
        quads = annotation.vertices or []
        marked = [pymupdf.Quad(quads[i : i + 4]).rect for i in range(0, len(quads) - 3, 4)]
        text = " ".join(
            [info.get("content") or "", info.get("title") or "", info.get("modDate") or ""]
            + [page.get_textbox(rect) for rect in marked]
        )
        areas = [annotation.rect]
        if marked and annotation.type[1] in ("Highlight", "Underline", "StrikeOut", "Squiggly"):
            areas.append(functools.reduce(lambda a, b: a | b, marked))
        out += [(area & page.rect, text) for area in areas]
        annotation = annotation.next
    return out


def _near_rect(a: pymupdf.Rect, b: pymupdf.Rect) -> bool:
    corners = zip((a.x0, a.y0, a.x1, a.y1), (b.x0, b.y0, b.x1, b.y1), strict=True)
    return all(abs(p - q) <= 0.5 for p, q in corners)


# DOCX rendered page breaks: MANIFEST.tsv says '>>' ends the text before each of Word's
# page boundaries and '<<' starts the text after it (features/steps/pagebreak.py).
# a link over two lines (a page break inside it) is "[words" then "words](address)"
_LINK_MARKUP = re.compile(r"\[|\]\([^)\s]*\)")
PAGE_BREAK_FACTS = {
    "No page breaks": 1,
    "Page break here>>": 1,
    "<<followed by more text.": 2,
    "Page break in>>": 2,
    "<<this hyperlink and another one here>>": 3,
    "<<with text following": 4,
    "Two page>>": 4,
    "<<breaks>>": 5,
    "<<in one run.": 6,
}


def _check_docx_pages(
    markdown: str, drafts: Sequence[LocationDraft | Location], seen: dict[str, int]
) -> None:
    for d in drafts:
        for marked in markdown[d.char_start : d.char_end].split("\n"):
            if not marked.strip():
                continue
            line = _LINK_MARKUP.sub("", marked)  # the text a reader sees: a link's words
            assert line in PAGE_BREAK_FACTS, f"unexpected text {line!r} in {PAGE_BREAKS_DOCX}"
            assert d.page_number == PAGE_BREAK_FACTS[line], (
                f"{line!r} is on page {PAGE_BREAK_FACTS[line]} (Word's rendered breaks), "
                f"location says page {d.page_number}"
            )
            seen[line] = d.page_number


# --- the test ------------------------------------------------------------------------------


def test_the_corpus_offers_every_format() -> None:
    kinds = {FORMATS[Path(n).suffix.lower()] for n in CORPUS_FILES}
    assert kinds == set(FORMATS.values())
    assert SCAN in CORPUS_FILES and PAGE_BREAKS_DOCX in CORPUS_FILES
    assert len(CORPUS_FILES) >= 50


@pytest.mark.parametrize("name", CORPUS_FILES, ids=_case_id)
def test_every_chunk_of_every_corpus_file_keeps_its_provenance(name: str, corpus: Path) -> None:  # noqa: C901
    path = corpus / name
    data = path.read_bytes()
    kind = sniff(head=data[:8192], name=path.name, path=str(path)).kind
    assert kind == FORMATS[path.suffix.lower()], f"{name} sniffed as {kind}"
    if name == SCAN:
        with pytest.raises(ConversionError, match="no text layer"):
            converter_for(kind).convert(data)
        return

    conversion = converter_for(kind).convert(data)
    markdown, body_start = conversion.markdown, conversion.body_start
    assert markdown[body_start:].strip(), f"{name}: no text converted"
    if kind in {"pdf", "docx", "pptx"}:
        assert len(conversion.line_pages) == len(markdown.split("\n"))
        assert conversion.page_count and conversion.page_count >= 1
    else:
        assert conversion.line_pages == []

    structure = MarkdownStructure(markdown, body_start=body_start)
    spans = chunk_markdown(structure, target=TARGET, overlap=OVERLAP)
    assert spans, f"{name}: no chunks"
    # a PDF's boxes narrowed to the words of ranges that start or end inside a line,
    # as ingestion stores them
    page_words = DocumentWords.read(data) if kind == "pdf" else None
    locator = Locator(
        structure, line_pages=conversion.line_pages, spans=conversion.spans, page_words=page_words
    )
    lines = _Lines(markdown)
    headings = _Headings(markdown, body_start)

    pdf = pymupdf.open(stream=data, filetype="pdf") if kind == "pdf" else None
    slides = [_Haystack(t) for t in _pptx_slide_texts(data)] if kind == "pptx" else None
    document = _Haystack(_document_texts(kind, data)) if kind not in {"pdf", "pptx"} else None
    if kind == "markdown":  # Markdown is ingested as uploaded: offsets are the user's
        assert markdown == data.decode("utf-8").removeprefix("\ufeff")
    tally = _SUMMARY[kind]
    tally.files += 1
    file_words = file_verified = 0
    docx_pages_seen: dict[str, int] = {}
    previous_start = -1
    try:
        for span in spans:
            drafts = locator.locate(span.char_start, span.char_end)
            assert span.char_start >= previous_start, "chunks out of document order"
            previous_start = span.char_start
            assert_invariants_1_and_3(markdown, body_start, span, drafts, lines, headings=headings)
            tally.chunks += 1
            tally.locations += len(drafts)

            for d in drafts:
                text = markdown[d.char_start : d.char_end]
                words = words_of(text)
                if kind in {"markdown", "json", "html"}:
                    assert d.page_number is None and d.boxes == [], d
                else:
                    assert d.page_number is not None and conversion.page_count is not None
                    assert 1 <= d.page_number <= conversion.page_count, d
                if kind == "pdf":
                    if not words:
                        continue  # Markdown syntax only (a table rule): nothing to find
                    assert d.boxes, f"{name}: location {d.char_start}-{d.char_end} has no boxes"
                    assert pdf is not None and d.page_number is not None
                    page = pdf[d.page_number - 1]
                    limit = page.rect + (-2, -2, 2, 2)
                    notes = _pdf_annotations(page)
                    noted = []  # the notes of annotations this location is boxed on
                    for box in d.boxes:
                        rect = pymupdf.Rect(box)
                        assert limit.contains(rect), f"box {box} outside page {d.page_number}"
                        noted += [text for area, text in notes if _near_rect(area, rect)]
                        assert noted or _clip_words(page, rect + (-1, -1, 1, 1)), (
                            f"box {box} on page {d.page_number} covers no text"
                        )
                    page_text = _clip_words(page, _inflated_union(d.boxes))
                    if noted:  # plus the converter's own words for a comment line
                        page_text += [*noted, "Comments unknown author note highlight ink mark"]
                    haystack = _Haystack(page_text)
                elif kind == "pptx":
                    for match in re.finditer(r"^# Slide (\d+)\b", text, re.M):
                        assert int(match.group(1)) == d.page_number, (
                            f"heading {match.group(0)!r} located on slide {d.page_number}"
                        )
                    assert slides is not None and d.page_number is not None
                    haystack = slides[d.page_number - 1]
                else:  # page-less formats and DOCX: words read from the whole original
                    if name == PAGE_BREAKS_DOCX:  # DOCX pages against Word's rendered breaks
                        _check_docx_pages(markdown, [d], docx_pages_seen)
                    assert document is not None
                    haystack = document
                found = [w for w in words if w in haystack]
                missing = [w for w in words if w not in haystack]
                rate = len(found) / len(words) if words else 1.0
                assert rate >= MIN_WORD_RATE, (
                    f"{name}: location chars {d.char_start}-{d.char_end} (page "
                    f"{d.page_number}): only {rate:.1%} of its words are in the source there; "
                    f"missing {missing[:20]}; text {text[:300]!r}"
                )
                file_words += len(words)
                file_verified += len(found)
                tally.misses.extend(missing)
    finally:
        if pdf is not None:
            pdf.close()
    tally.words += file_words
    tally.verified += file_verified

    if not headings.full:  # the single-pass index agrees with the shared helper
        sample = spans[:: max(1, len(spans) // 4)] + spans[-1:]
        for span in sample:
            assert headings.at(span.char_start) == headings_in_force(
                markdown, span.char_start, body_start
            )
    if name == PAGE_BREAKS_DOCX:
        assert docx_pages_seen.keys() == PAGE_BREAK_FACTS.keys(), "some text was never located"
        assert conversion.page_count == 6
    assert file_words > 0, f"{name}: no words verified"
    verified = f"{file_verified}/{file_words}" if file_words else "-"
    print(f"{name}: {len(spans)} chunks, words verified {verified}")
