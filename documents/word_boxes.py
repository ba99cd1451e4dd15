"""Highlight boxes narrowed from whole PDF lines to the words of a character range.

The converter stores one box per PDF line (or table cell) with the Markdown
characters it produced. A chunk or quoted sentence that starts or ends inside
a line would light up the whole line; here such a line (in a chunk's Locations
at ingestion, and in the viewer for quoted sentences) is narrowed to the
boxes of the words that carry the range's characters, read from the page with
``get_text('words')``. The line's Markdown words and the page's words are
matched in order (escapes, emphasis marks and case ignored); when a word of
the range finds no partner on the page (ligatures, joined hyphenation), the
whole line is kept: a box never leaves out cited text. Lines with right-to-left
script are kept whole as well: the page lists their words left to right, the
Markdown in reading order, and a repeated word could pair with the wrong copy.
"""

from __future__ import annotations

import json
import re
import struct
import sys
import unicodedata
import zlib
from array import array
from collections.abc import Sequence
from difflib import SequenceMatcher
from itertools import accumulate

import pymupdf

from documents.converters.pdf.budget import DecodeBudget
from documents.converters.pdf.extract import TEXT_FLAGS
from documents.converters.pdf.mupdf_version import mupdf_require
from documents.converters.pdf.words import PageWordIndex

Range = tuple[int, int]
Span = Sequence  # [char_start, char_end, page, x0, y0, x1, y1] as SourceBoxes stores it

_WORD = re.compile(r"\S+")
_NOT_WORD_CHARS = re.compile(r"[\W_]+")


def _right_to_left(text: str) -> bool:
    return any(unicodedata.bidirectional(ch) in {"R", "AL"} for ch in text)


def _key(word: str) -> str:
    """What two spellings of one word share: letters and digits, case folded."""
    return _NOT_WORD_CHARS.sub("", word).casefold() or word


def line_box(span: Span) -> list[float]:
    """The stored box of a whole line, as the viewer draws it."""
    return [round(float(v), 2) for v in span[3:7]]


class PageWords(PageWordIndex):
    """The words of one PDF page, matched line by line."""

    def in_line(self, box: Sequence[float]) -> list[tuple[float, float, float, float, str]]:
        """Words whose centre lies inside ``box``, left to right."""
        return [
            (w.left, w.top, w.right, w.bottom, w.text)
            for w in sorted(self.within(box), key=lambda w: w.left)
        ]

    def narrowed(self, span: Span, text: str, ranges: Sequence[Range]) -> list[list[float]]:
        """Boxes on this line for the parts of ``ranges`` it carries.

        ``text`` is the Markdown the span produced (``markdown[start:end]``).
        """
        start, end, _page, *box = span
        wanted = [(max(a, start), min(b, end)) for a, b in ranges if a < end and b > start]
        if not wanted:
            return []
        if all(a <= start and b >= end for a, b in wanted) or _right_to_left(text):
            return [line_box(span)]
        mine = [(m.start() + start, m.end() + start, m.group()) for m in _WORD.finditer(text)]
        theirs = self.in_line(box)
        partner: dict[int, int] = {}
        matcher = SequenceMatcher(
            a=[_key(w[2]) for w in mine], b=[_key(w[4]) for w in theirs], autojunk=False
        )
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                partner[block.a + k] = block.b + k
        boxes: list[list[float]] = []
        for a, b in wanted:
            covered = [i for i, (ws, we, _) in enumerate(mine) if ws < b and we > a]
            if not covered:
                continue
            if any(i not in partner for i in covered):
                return [line_box(span)]  # cannot place every word: keep the whole line
            found = [theirs[partner[i]] for i in covered]
            narrowed = [
                min(w[0] for w in found),
                box[1],
                max(w[2] for w in found),
                box[3],
            ]
            boxes.append([round(float(v), 2) for v in narrowed])
        return boxes


def pdf_page_words(data: bytes) -> list[list[tuple]]:
    """Every page's words as the converter reads text: ``[page][word] = (x0, y0, x1,
    y1, text, ...)`` as ``get_text('words')`` gives them. A page past the converter's
    decoding caps is refused as the converter refuses it (``pdf.budget``), before
    MuPDF decodes it; nothing is parsed by a MuPDF with known flaws."""
    mupdf_require()
    with pymupdf.open(stream=data, filetype="pdf") as document:
        budget, pages = DecodeBudget(document), []
        for index, page in enumerate(document):
            budget.page_check(index)
            pages.append(page.get_text("words", flags=TEXT_FLAGS))
        return pages


# the packing's first bytes; what lacks them is the JSON a worker before it kept
_PACKED = b"words/2\n"
_SIZES = struct.Struct("<II")


def words_pack(pages: Sequence[Sequence[Sequence]]) -> bytes:
    """Page words compressed for keeping between ingestion stages: the words per
    page and every text as JSON, every box as one array of 32-bit floats (MuPDF
    computes in single precision, so nothing is rounded). Packed and unpacked in a
    fraction of the time JSON of the whole takes."""
    counts = json.dumps([len(page) for page in pages]).encode()
    texts = json.dumps([w[4] for page in pages for w in page], separators=(",", ":")).encode()
    boxes = array("f", [v for page in pages for w in page for v in w[:4]])
    if sys.byteorder == "big":
        boxes.byteswap()
    body = _SIZES.pack(len(counts), len(texts)) + counts + texts + boxes.tobytes()
    return _PACKED + zlib.compress(body, 1)


def words_unpack(packed: bytes) -> Sequence[Sequence[Sequence]]:
    """Pages of ``[x0, y0, x1, y1, text]`` words; ``ValueError`` if ``packed`` is not
    whole and consistent or inflates past ``UNPACKED_LIMIT`` (it comes from the
    sandbox child, which reads hostile files)."""
    if not packed.startswith(_PACKED):
        return _legacy_pages(json.loads(_inflate(packed)))
    body = _inflate(packed[len(_PACKED) :])
    try:
        counts_size, texts_size = _SIZES.unpack_from(body)
    except struct.error as error:
        raise ValueError("packed words are cut short") from error
    start = _SIZES.size
    counts = json.loads(body[start : start + counts_size])
    texts = json.loads(body[start + counts_size : start + counts_size + texts_size])
    boxes = array("f")
    boxes.frombytes(body[start + counts_size + texts_size :])
    if sys.byteorder == "big":
        boxes.byteswap()
    if not (
        isinstance(counts, list)
        and all(type(n) is int and n >= 0 for n in counts)
        and isinstance(texts, list)
        and all(isinstance(t, str) for t in texts)
        and sum(counts) == len(texts) == len(boxes) // 4
        and len(boxes) % 4 == 0
    ):
        raise ValueError("packed words do not add up")
    return _PackedPages(counts, texts, boxes)


# the most a packing may inflate to: ~10 million words (~100,000 dense pages)
UNPACKED_LIMIT = 256 * 1024 * 1024


def _inflate(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    body = inflater.decompress(data, UNPACKED_LIMIT)
    if inflater.unconsumed_tail or not inflater.eof:
        raise ValueError("packed words inflate past the limit or are cut short")
    return body


def _legacy_pages(pages: object) -> list[list[list]]:
    """The JSON packing (before ``words/2``), checked word by word like the new one."""
    if not isinstance(pages, list) or not all(isinstance(page, list) for page in pages):
        raise ValueError("packed words are not pages of words")
    checked = []
    for page in pages:
        words = []
        for word in page:
            if not (
                isinstance(word, list)
                and len(word) >= 5
                and all(type(v) in (int, float) for v in word[:4])
                and isinstance(word[4], str)
            ):
                raise ValueError("packed words are not pages of words")
            words.append(word[:5])
        checked.append(words)
    return checked


class _PackedPages(Sequence):
    """Unpacked words, a page's list built when the page is asked for: the chunk
    stage narrows boxes on some pages only."""

    def __init__(self, counts: list[int], texts: list[str], boxes: array) -> None:
        self._starts = [0, *accumulate(counts)]
        self._texts = texts
        self._boxes = boxes

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __getitem__(self, index: int) -> list[list]:  # type: ignore[override]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        first, last = self._starts[index], self._starts[index + 1]
        b = self._boxes
        return [
            [b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3], self._texts[i]]
            for i in range(first, last)
        ]


class DocumentWords:
    """The words of a PDF's pages, as ``pdf_words_isolated`` read them, indexed per
    page when first asked for; ``None`` for a page it does not have."""

    def __init__(self, pages: Sequence[Sequence[Sequence]]) -> None:
        self.pages = pages
        self._indexes: dict[int, PageWords] = {}

    @classmethod
    def read(cls, data: bytes) -> DocumentWords:
        """Read in this process: for bytes the sandboxed converter has already read
        (tests, and the corpus checks that replay ingestion)."""
        return cls(pdf_page_words(data))

    def __call__(self, number: int) -> PageWords | None:
        if not 1 <= number <= len(self.pages):
            return None
        if number not in self._indexes:
            self._indexes[number] = PageWords(None, words=self.pages[number - 1])
        return self._indexes[number]
