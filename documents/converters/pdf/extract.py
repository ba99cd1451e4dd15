"""Pass 1, extract: one page's ``get_text("dict")`` to lines in blocks.

One text pass per page and plain geometry, no ML. Spans become lines (their
font size, weight and fixed width counted by characters), lines PyMuPDF cut
on one row are joined, hidden text without an image under it is dropped, and
glyphs that mean nothing as text (pictograph fonts, control characters,
unmapped glyphs) become list markers or spaces.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

import pymupdf

from documents.converters.pdf.geometry import Box, rects_union, union
from documents.converters.pdf.lines import Block, Line, Part, join_row
from documents.converters.pdf.thresholds import (
    FONT_SIZE_DECIMALS,
    GLYPH_WIDTH_PT,
    LIGATURE_JOIN_PT,
    MARKER_APART_EM,
    MARKER_GLYPHS,
    MARKER_TOUCH_EM,
    SAME_ROW_GAP_EM,
    SAME_ROW_OVERLAP,
    SAME_ROW_SIZE_RATIO,
    SLACK_PT,
    STYLED_LINE_SHARE,
    ZERO_WIDTH_PT,
)

Span = dict[str, Any]  # a span of PyMuPDF's "dict" text

# expand ligatures (no PRESERVE_LIGATURES) so words match what users search for
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
SUPERSCRIPT = pymupdf.TEXT_FONT_SUPERSCRIPT  # a span's flag: MuPDF saw it set small and raised
BOLD = pymupdf.TEXT_FONT_BOLD  # a span's flag
MONOSPACED = pymupdf.TEXT_FONT_MONOSPACED  # a span's flag
BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi", re.I)
# pictograph fonts: their glyphs (checkboxes, arrows, bullets) come out as letters,
# as nothing (U+FFFD) or as control characters
DINGBAT_FONT = re.compile(r"wingdings|webdings|dingbats", re.I)
# fonts of fixed width whose PDFs do not set the monospaced flag (TeX's CMTT, Courier)
# (not "Monotype Corsiva", a script face)
MONO_FONT = re.compile(r"mono(?!type)|courier|consol|menlo|inconsolata|cmtt|lmtt|sourcecode", re.I)
# Wingdings (not Wingdings 2 or 3) codes Word uses for bullets and form boxes, as the
# pictographs they draw: a ticked box stays a ticked box
WINGDINGS_FONT = re.compile(r"wingdings(?![-_ ]?[23])", re.I)
WINGDINGS = str.maketrans(
    {
        "l": "\u25cf",  # ●
        "n": "\u25a0",  # ■
        "o": "\u2610",  # ☐ (Word's empty form box)
        "q": "\u2751",  # ❑
        "u": "\u25c6",  # ◆
        "v": "\u2756",  # ❖
        "\u00a7": "\u25aa",  # § ▪
        "\u00a8": "\u2610",  # ¨ ☐
        "\u00d8": "\u27a2",  # Ø ➢
        "\u00fb": "\u2717",  # û ✗
        "\u00fc": "\u2713",  # ü ✓
        "\u00fd": "\u2612",  # ý ☒
        "\u00fe": "\u2611",  # þ ☑
    }
)
# C0/C1 control characters some fonts map glyphs to: never text, so a space (a dash
# mapped to one must not glue "9" and "17" into "917")
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
CONTROL_CHARS = re.compile(f"[{_CONTROLS}]")
# glyphs that say nothing but "a mark is drawn here": no Unicode value, a control
# character, a private-use code point
MEANINGLESS = re.compile(f"[\ufffd\ue000-\uf8ff{_CONTROLS}]+")
MARKER = "\u2022"
LAM = "\u0644"
ALEFS = frozenset("\u0622\u0623\u0625\u0627\u0671")  # alef, with madda/hamza/wasla
LAM_ALEF_VISUAL = re.compile("[\u0622\u0623\u0625\u0627\u0671]\u0644")
WHITESPACE_RUN = re.compile(r"\s+")
UNMAPPED_RUN = re.compile("\ufffd+")  # U+FFFD: MuPDF's stand-in for an unmapped glyph


class Superscript(NamedTuple):
    """A span MuPDF saw set small and raised: its box and its text."""

    box: Box
    text: str


class PageText(NamedTuple):
    """What the extract pass reads from one page."""

    blocks: list[Block]
    hidden: int  # lines of invisible text dropped
    superscripts: list[Superscript]  # for the text of table cells


def extract_page(page: pymupdf.Page, images: bool) -> PageText:
    """Text blocks of a page (lines merged per baseline), the count of hidden lines
    dropped, and the page's superscripts. ``images``: whether the page lists images
    (the converter counts them too)."""
    data = page.get_text("dict", flags=TEXT_FLAGS)
    _lam_alef_fix(page, data)
    has_images = images or any(b["type"] == 1 for b in data["blocks"])
    blocks: list[Block] = []
    hidden = 0
    for raw in data["blocks"]:
        if raw["type"] != 0:
            continue
        lines, dropped = _block_lines(raw, keep_invisible=has_images)
        hidden += dropped
        if lines:
            blocks.append(Block(lines, union([ln.box for ln in lines])))
    return PageText(blocks, hidden, page_superscripts(data))


def _block_lines(raw: dict[str, Any], *, keep_invisible: bool) -> tuple[list[Line], int]:
    """A text block's lines, those MuPDF cut on one row joined, and how many lines of
    hidden text it dropped."""
    lines: list[Line] = []
    hidden = 0
    for raw_line in raw["lines"]:
        line = _line_from_spans(raw_line["spans"], keep_invisible)
        if line is None:
            hidden += any(without_controls(s["text"]).strip() for s in raw_line["spans"])
        elif lines and _one_marker(lines[-1], line):
            lines[-1] = _marker_line(lines[-1], line)
        elif lines and _same_row(lines[-1], line):
            lines[-1] = join_row(lines[-1], line)
        else:
            lines.append(line)
    return lines, hidden


@functools.lru_cache(maxsize=512)
def _font_traits(name: str) -> tuple[bool, bool, bool]:
    """(pictograph font, bold font, fixed-width font): fonts repeat on every span of
    a page, so each name is matched once."""
    return (
        bool(DINGBAT_FONT.search(name)),
        bool(BOLD_NAME.search(name)),
        bool(MONO_FONT.search(name)),
    )


class _LineTally:
    """A line's text and boxes as its spans are read, and its characters counted
    per font size, in bold and in a fixed-width font."""

    __slots__ = ("bold", "boxes", "mono", "sizes", "text")

    def __init__(self) -> None:
        self.text = ""
        self.boxes: list[tuple[float, float, float, float]] = []
        self.sizes: dict[float, int] = {}  # characters per font size, in order of first use
        self.bold = 0
        self.mono = 0

    def space(self, span: Span) -> None:
        """A word space of its own (a third of a typeset paper's spans): no counts."""
        self.text += " "
        self.boxes.append(span["bbox"])
        self.sizes.setdefault(round(span["size"], FONT_SIZE_DECIMALS), 0)

    def add(self, span: Span, text: str) -> None:
        """A span of text (``text`` as read), counted by size, weight and width."""
        _pictographs, bold_font, mono_font = _font_traits(span["font"])
        n = len(text.strip())
        if span["flags"] & SUPERSCRIPT and n:
            text = superscript_marked(text)
        size = round(span["size"], FONT_SIZE_DECIMALS)
        self.sizes[size] = self.sizes.get(size, 0) + n
        if span["flags"] & BOLD or bold_font:
            self.bold += n
        if span["flags"] & MONOSPACED or mono_font:
            self.mono += n
        self.text += text
        self.boxes.append(span["bbox"])

    def line(self) -> Line | None:
        """The line, set in its most used size (the first of equals); None if blank."""
        stripped = self.text.strip()
        if not stripped:
            return None
        total = sum(self.sizes.values()) or 1
        box = rects_union(self.boxes)
        size = max(self.sizes, key=self.sizes.__getitem__)
        mono = self.mono >= STYLED_LINE_SHARE * total
        lead = len(self.text) - len(self.text.lstrip()) if mono else 0
        as_set = stripped.replace("\u00ad", "-")
        text = WHITESPACE_RUN.sub(" ", as_set)
        bold = self.bold >= STYLED_LINE_SHARE * total
        spaced = as_set if mono else ""
        return Line(text, box, size, bold, [Part(0, len(text), box)], mono, lead, spaced)


def _line_from_spans(spans: list[Span], keep_invisible: bool) -> Line | None:
    """One PyMuPDF line's spans as a ``Line``; None if nothing visible is left."""
    tally = _LineTally()
    for i, span in enumerate(spans):
        text = span["text"]
        if not text or (not keep_invisible and span.get("alpha", 255) == 0):
            continue  # render-mode-3 text with nothing under it: hidden, not content
        if text == " ":
            tally.space(span)
        else:
            tally.add(span, _span_text(span, spans[i + 1 :], tally.text))
    return tally.line()


def _span_text(span: Span, following: list[Span], before: str) -> str:
    """A span's text as read: a pictograph font's glyphs as what they draw, control
    characters and unmapped glyphs as spaces. ``before``: the line's text so far."""
    text = span["text"]
    if _font_traits(span["font"])[0]:
        text = _pictographs(span, following, leads=not before.strip())
    if not text.isprintable():  # without_controls, inline: it runs for every span
        text = CONTROL_CHARS.sub(" ", text)
    if "\ufffd" in text:  # glyphs the font maps to no character: nothing to read
        text = UNMAPPED_RUN.sub(" ", text)
    return text


def superscript_marked(text: str) -> str:
    """A superscript as Pandoc's ``^…^``: a footnote mark or an exponent set small and
    raised stays apart from what it follows ("273.879.750^1^", "a^2^", "km^2^"),
    which run together would read as another number or another word."""
    core = text.strip()
    start = text.index(core)
    return f"{text[:start]}^{core}^{text[start + len(core) :]}"


def page_superscripts(data: dict[str, Any]) -> list[Superscript]:
    """The superscript spans of a page's ``dict`` text."""
    return [
        Superscript(Box.of(span["bbox"]), span["text"].strip())
        for block in data["blocks"]
        if block["type"] == 0
        for line in block["lines"]
        for span in line["spans"]
        if span["flags"] & SUPERSCRIPT and span["text"].strip()
    ]


def without_controls(text: str) -> str:
    """Control characters as spaces: never text, and they could glue two words."""
    if text.isprintable():  # no control character is printable: most spans, no regex
        return text
    return CONTROL_CHARS.sub(" ", text)


def _pictographs(span: Span, following: list[Span], *, leads: bool) -> str:
    """A pictograph font's text: Wingdings codes as the pictographs they draw, and a
    glyph without a meaning that starts a line, set apart from the text after it, as
    a list marker (an icon inside running text is never one)."""
    text = span["text"]
    if WINGDINGS_FONT.search(span["font"]):
        text = text.translate(WINGDINGS)
    glyphs = text.strip()
    if not (leads and glyphs and len(glyphs) <= MARKER_GLYPHS and MEANINGLESS.fullmatch(glyphs)):
        return text
    after = next((s for s in following if s["text"].strip()), None)
    if after is not None:
        gap = Box.of(after["bbox"]).x0 - Box.of(span["bbox"]).x1
        if gap < MARKER_APART_EM * span["size"]:
            return text
    return MARKER + " "


def _lam_alef_ordered(chars: list[dict[str, Any]]) -> str:
    """A span's text with each lam-alef ligature's letters in logical order.

    MuPDF expands the ligature into a lam carrying the glyph's box and a
    zero-width alef at the glyph's right edge, then orders right-to-left text by
    position, so the alef comes first: "اإل" where the page shows "الإ". Only
    that pair is swapped back: a zero-width alef directly followed by a lam, with
    a real width, whose box ends where the alef stands. Other zero-width marks
    (vowel signs, glyphs that carry a whole word) keep their order.
    """
    out: list[str] = []
    i = 0
    while i < len(chars):
        char = chars[i]
        following = chars[i + 1] if i + 1 < len(chars) else None
        if following is not None and _swapped_lam_alef(char, following):
            out += [LAM, char["c"]]
            i += 2
            continue
        out.append(char["c"])
        i += 1
    return "".join(out)


def _swapped_lam_alef(char: dict[str, Any], following: dict[str, Any]) -> bool:
    """``char`` is a ligature's zero-width alef put before the lam that draws it."""
    alef, lam = Box.of(char["bbox"]), Box.of(following["bbox"])
    return (
        char["c"] in ALEFS
        and following["c"] == LAM
        and alef.width < ZERO_WIDTH_PT
        and lam.width > GLYPH_WIDTH_PT
        and abs(lam.x1 - alef.x0) < LIGATURE_JOIN_PT
    )


def _lam_alef_fix(page: pymupdf.Page, data: dict[str, Any]) -> None:
    """Rewrite, in ``data`` (the page's ``dict`` text), the spans holding a lam-alef
    ligature from their glyphs (see ``_lam_alef_ordered``); pages without the
    pattern skip the slower glyph-level extraction."""
    page_text = "\n".join(  # one search per page: no match spans a line break
        span["text"]
        for block in data["blocks"]
        if block["type"] == 0
        for line in block["lines"]
        for span in line["spans"]
    )
    if not LAM_ALEF_VISUAL.search(page_text):
        return
    glyphs = page.get_text("rawdict", flags=TEXT_FLAGS)
    for block, raw_block in zip(data["blocks"], glyphs["blocks"], strict=False):
        if block["type"] != 0 or raw_block["type"] != 0:
            continue
        for line, raw_line in zip(block["lines"], raw_block["lines"], strict=False):
            for span, raw_span in zip(line["spans"], raw_line["spans"], strict=False):
                if LAM_ALEF_VISUAL.search(span["text"]) and len(raw_span["chars"]) == len(
                    span["text"]
                ):
                    span["text"] = _lam_alef_ordered(raw_span["chars"])


def _overlap(a: Line, b: Line) -> float:
    """How far two lines overlap vertically (negative: the gap between them)."""
    return min(a.box.y1, b.box.y1) - max(a.box.y0, b.box.y0)


def _one_marker(a: Line, b: Line) -> bool:
    """Two marker glyphs drawn touching on one row (a box and its tick): one marker."""
    gap = max(a.box.x0, b.box.x0) - min(a.box.x1, b.box.x1)
    return (
        a.text == b.text == MARKER
        and gap <= MARKER_TOUCH_EM * max(a.size, b.size)
        and _overlap(a, b) > SAME_ROW_OVERLAP * min(a.height, b.height)
    )


def _marker_line(a: Line, b: Line) -> Line:
    """Two touching marker glyphs as the one marker they draw."""
    box = union([a.box, b.box])
    return Line(MARKER, box, max(a.size, b.size), a.bold and b.bold, [Part(0, 1, box)])


def _same_row(a: Line, b: Line) -> bool:
    """``b`` goes on ``a``'s row, to its right; not a title and small print set far
    apart on one row ("BOOKING ORDER" and its print date): those stay two lines."""
    if _overlap(a, b) <= SAME_ROW_OVERLAP * min(a.height, b.height):
        return False  # not on one row
    if b.box.x0 < a.box.x1 - SLACK_PT:
        return False  # not to its right
    small, large = sorted((a.size, b.size))
    return large <= SAME_ROW_SIZE_RATIO * small or b.box.x0 - a.box.x1 <= SAME_ROW_GAP_EM * small
