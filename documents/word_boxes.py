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
import unicodedata
import zlib
from collections.abc import Sequence
from difflib import SequenceMatcher

import pymupdf

from documents.converters._pdf_layout import TEXT_FLAGS
from documents.converters._pdf_words import PageWordIndex

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


def pdf_page_words(data: bytes) -> list[list[list]]:
    """Every page's words as the converter reads text: ``[page][word] = [x0, y0, x1,
    y1, text]``, plain lists so the sandbox can answer them as JSON."""
    with pymupdf.open(stream=data, filetype="pdf") as document:
        return [
            [list(w[:5]) for w in page.get_text("words", flags=TEXT_FLAGS)] for page in document
        ]


def words_pack(pages: list[list[list]]) -> bytes:
    """Page words as compressed JSON, as the sandbox answers them and the convert
    stage keeps them for the chunk stage: ~1.5 MB for 100 dense pages, not ~7 MB."""
    return zlib.compress(json.dumps(pages, separators=(",", ":")).encode(), 1)


def words_unpack(packed: bytes) -> list[list[list]]:
    return json.loads(zlib.decompress(packed))


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
