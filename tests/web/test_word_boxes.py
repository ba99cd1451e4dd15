"""Narrowed highlight boxes, checked by position on every corpus PDF: where a
cited range starts or ends inside a PDF line, the narrowed box holds every cited
word of that line, in the line's own order, and no box is narrowed wrongly."""

from __future__ import annotations

import re

import pymupdf
import pytest

from citations.generators.extractive.sentences import sentences_of
from documents.chunking import chunk_markdown
from documents.converters import ConversionError, converter_for
from documents.markdown_structure import MarkdownStructure
from documents.word_boxes import PageWords, _key
from tests.support.corpus import CORPUS, corpus_files

PDFS = corpus_files("*.pdf", exclude=("hostile",))
# corpus PDFs the converter refuses, with the reason it must give: nothing of them
# is highlighted, so there are no boxes to check
REFUSED = {"markitdown/test_files/MEDRPT-2024-PAT-3847_medical_report_scan.pdf": "no text layer"}
_TOKEN = re.compile(r"\S+")


def _ranges(markdown: str, body_start: int) -> list[tuple[int, int]]:
    """Chunk ranges and the sentences inside them: most start or end mid-line."""
    structure = MarkdownStructure(markdown, body_start=body_start)
    ranges = []
    for span in chunk_markdown(structure, target=200, overlap=32):
        ranges.append((span.char_start, span.char_end))
        text = markdown[span.char_start : span.char_end]
        ranges += [(span.char_start + a, span.char_start + b) for a, b in sentences_of(text)]
    return ranges


def _in_order(cited: list[str], line: list[str]) -> list[int]:
    """Start indexes in ``line`` where ``cited`` occurs as a contiguous run."""
    return [i for i in range(len(line) - len(cited) + 1) if line[i : i + len(cited)] == cited]


@pytest.mark.parametrize("name", PDFS)
def test_narrowed_boxes_hold_every_cited_word_of_their_line(name: str) -> None:
    data = (CORPUS / name).read_bytes()
    if name in REFUSED:
        with pytest.raises(ConversionError, match=REFUSED[name]):
            converter_for("pdf").convert(data)
        return
    conversion = converter_for("pdf").convert(data)
    markdown = conversion.markdown
    narrowed_lines = 0
    with pymupdf.open(stream=data, filetype="pdf") as document:
        pages: dict[int, PageWords] = {}
        spans = sorted(conversion.spans, key=lambda s: s.char_start)
        for a, b in _ranges(markdown, conversion.body_start):
            for s in spans:
                if s.char_end <= a or s.char_start >= b:
                    continue
                if a <= s.char_start and b >= s.char_end:
                    continue  # the whole line is cited: nothing to narrow
                row = [s.char_start, s.char_end, s.page_number, s.x0, s.y0, s.x1, s.y1]
                if s.page_number not in pages:
                    pages[s.page_number] = PageWords(document[s.page_number - 1])
                words = pages[s.page_number]
                text = markdown[s.char_start : s.char_end]
                [box] = words.narrowed(row, text, [(a, b)])
                if box == [round(v, 2) for v in row[3:]]:
                    continue  # kept whole: nothing left out
                narrowed_lines += 1
                cited = [
                    _key(m.group())
                    for m in _TOKEN.finditer(text)
                    if s.char_start + m.start() < b and s.char_start + m.end() > a
                ]
                on_line = words.in_line(row[3:])
                keys = [_key(w[4]) for w in on_line]
                starts = _in_order(cited, keys)
                assert starts, f"{name}: cited {cited} not in order on the line {keys}"
                assert any(
                    all(
                        box[0] - 0.01 <= (w[0] + w[2]) / 2 <= box[2] + 0.01
                        for w in on_line[i : i + len(cited)]
                    )
                    for i in starts
                ), f"{name}: {cited} not all inside {box} on page {s.page_number}"
                assert box[2] - box[0] < s.x1 - s.x0 + 0.01
    if name == "markitdown/test_files/test.pdf":
        assert narrowed_lines >= 20  # the check did look at narrowed lines


def test_every_refused_pdf_is_in_the_corpus() -> None:
    """A refused file that left the corpus would leave REFUSED checking nothing."""
    assert set(REFUSED) <= set(PDFS)


def test_a_right_to_left_line_with_a_repeated_word_stays_whole() -> None:
    """The page lists right-to-left words left to right; their Markdown is in
    reading order. Pairing the repeated word with its wrong copy would leave the
    first cited word out, so such a line is never narrowed."""
    words = PageWords(
        None,
        words=[
            (0, 0, 40, 10, "في", 0, 0, 0),
            (100, 0, 140, 10, "قلم", 0, 0, 1),
            (200, 0, 240, 10, "كتاب", 0, 0, 2),
            (300, 0, 340, 10, "في", 0, 0, 3),
        ],
    )
    text = "في كتاب قلم في"
    span = [0, len(text), 1, 0, 0, 340, 10]
    assert words.narrowed(span, text, [(0, len("في كتاب"))]) == [[0, 0, 340, 10]]


def test_a_left_to_right_line_narrows_to_the_cited_words() -> None:
    words = PageWords(
        None,
        words=[
            (0, 0, 40, 10, "Alpha.", 0, 0, 0),
            (50, 0, 90, 10, "Beta", 0, 0, 1),
            (100, 0, 140, 10, "gamma.", 0, 0, 2),
        ],
    )
    text = "Alpha. Beta gamma."
    span = [500, 500 + len(text), 1, 0, 0, 140, 10]
    assert words.narrowed(span, text, [(507, 518)]) == [[50, 0, 140, 10]]
