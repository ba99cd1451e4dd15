"""Light, fast page-layout logic for the PDF converter (no ML, one text pass per page).

The PDF converter calls ``extract_page`` once per page and then works only on
these small records: lines with their box, font size and weight, grouped in
PyMuPDF's blocks. Everything here is plain geometry so it stays well above
100 pages per second on text PDFs.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pymupdf

Box = tuple[float, float, float, float]

# expand ligatures (no PRESERVE_LIGATURES) so words match what users search for
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
SUPERSCRIPT = pymupdf.TEXT_FONT_SUPERSCRIPT  # a span's flag: MuPDF saw it set small and raised
BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi", re.I)
# pictograph fonts: their glyphs (checkboxes, arrows, bullets) come out as letters,
# as nothing (U+FFFD) or as control characters
DINGBAT_FONT = re.compile(r"wingdings|webdings|dingbats", re.I)
# fonts of fixed width whose PDFs do not set the monospaced flag (TeX's CMTT, Courier)
# (not "Monotype Corsiva", a script face)
MONO_FONT = re.compile(r"mono(?!type)|courier|consol|menlo|inconsolata|cmtt|lmtt|sourcecode", re.I)
MONOSPACED = 8  # the span flag
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
BULLET = re.compile(
    r"^\s*([\u2022\u25e6\u25aa\u25cf\u2023\u2043\u25a0\u25a1\u2219\u00b7\u2013\u2014*-])\s+(?=\S)"
)
NUMBERED = re.compile(r"^\s*(\d{1,3}[.)]|\(\d{1,2}\)|\(?[a-zA-Z][.)]|\.\d{1,3})\s+(?=\S)")
MARKER_ONLY = re.compile(
    r"^\s*([\u2022\u25e6\u25aa\u25cf\u2023\u2043\u25a0\u25a1\u2219\u00b7\u2013*-]|\(?\d{1,3}[.)]|\.\d{1,3}|\(?[a-zA-Z][.)])\s*$"
)
LAM = "\u0644"
ALEFS = frozenset("\u0622\u0623\u0625\u0627\u0671")  # alef, with madda/hamza/wasla
LAM_ALEF_VISUAL = re.compile("[\u0622\u0623\u0625\u0627\u0671]\u0644")
WHITESPACE_RUN = re.compile(r"\s+")
UNMAPPED_RUN = re.compile("\ufffd+")  # U+FFFD: MuPDF's stand-in for an unmapped glyph
PAGE_NUMBER = re.compile(r"^\W*(page\s*)?(\d{1,4}|[ivxlcdm]{1,6})(\s*(of|/)\s*\d{1,4})?\W*$", re.I)
MARGIN_NUMBER = re.compile(r"^\W*(page\s*)?\d{1,4}(\s*(of|/)\s*\d{1,4})?\W*$", re.I)
NAMED_PAGE_NUMBER = re.compile(r"^\W*page\s*\d{1,4}\s*(of|/)\s*\d{1,4}\W*$", re.I)


@dataclass
class Line:
    """One visual line: its text, box, and the PDF boxes behind parts of the text."""

    text: str
    box: Box
    size: float
    bold: bool
    parts: list[tuple[int, int, Box]] = field(default_factory=list)  # offsets into text
    mono: bool = False  # set (almost) wholly in a fixed-width font
    lead: int = 0  # blanks the line's text started with (a listing's indent, when typed)
    spaced: str = ""  # a fixed-width line's text with its inner blanks as set (alignment)

    @property
    def height(self) -> float:
        return self.box[3] - self.box[1]


@dataclass
class Block:
    """A group of lines PyMuPDF saw as one block, or a table placeholder."""

    lines: list[Line]
    box: Box
    table: object | None = None  # a _pdf_tables.RuledTable when this block is a table
    lines_before_tables: int = 0  # how many lines it had before table rows left it

    @property
    def line_count(self) -> int:
        """Its lines as laid out: rows taken by a table still count (a block's
        leftover after a table is not a short title block)."""
        return max(len(self.lines), self.lines_before_tables)


def union(boxes: list[Box]) -> Box:
    x0, y0, x1, y1 = boxes[0]
    for b in boxes:  # one pass: this runs for every line of every page
        if b[0] < x0:
            x0 = b[0]
        if b[1] < y0:
            y0 = b[1]
        if b[2] > x1:
            x1 = b[2]
        if b[3] > y1:
            y1 = b[3]
    return (x0, y0, x1, y1)


@functools.lru_cache(maxsize=512)
def _font_traits(name: str) -> tuple[bool, bool, bool]:
    """(pictograph font, bold font, fixed-width font): fonts repeat on every span of
    a page, so each name is matched once."""
    return (
        bool(DINGBAT_FONT.search(name)),
        bool(BOLD_NAME.search(name)),
        bool(MONO_FONT.search(name)),
    )


def _line_from_spans(spans: list[dict], keep_invisible: bool) -> Line | None:
    text, bold_chars, mono_chars, boxes = "", 0, 0, []
    sizes: dict[float, int] = {}  # characters per font size, in order of first use
    for i, span in enumerate(spans):
        t = span["text"]
        if not t or (not keep_invisible and span.get("alpha", 255) == 0):
            continue  # render-mode-3 text with nothing under it: hidden, not content
        if t == " ":  # a word space of its own (a third of a typeset paper's spans)
            text += t
            boxes.append(span["bbox"])
            sizes.setdefault(round(span["size"], 1), 0)
            continue
        pictographs, bold_font, mono_font = _font_traits(span["font"])
        if pictographs:
            t = _pictographs(span, spans[i + 1 :], leads=not text.strip())
        if not t.isprintable():  # without_controls, inline: it runs for every span
            t = CONTROL_CHARS.sub(" ", t)
        if "\ufffd" in t:  # glyphs the font maps to no character: nothing to read
            t = UNMAPPED_RUN.sub(" ", t)
        n = len(t.strip())
        if span["flags"] & SUPERSCRIPT and n:
            t = superscript_marked(t)
        size = round(span["size"], 1)
        sizes[size] = sizes.get(size, 0) + n
        if span["flags"] & 16 or bold_font:
            bold_chars += n
        if span["flags"] & MONOSPACED or mono_font:
            mono_chars += n
        text += t
        boxes.append(span["bbox"])
    stripped = text.strip()
    if not stripped:
        return None
    total = sum(sizes.values()) or 1
    box = union(boxes)
    size = max(sizes, key=sizes.__getitem__)  # the most used; the first of equals
    mono = mono_chars >= 0.8 * total
    lead = len(text) - len(text.lstrip()) if mono else 0
    as_set = stripped.replace("\u00ad", "-")
    text = WHITESPACE_RUN.sub(" ", as_set)
    bold = bold_chars >= 0.8 * total
    return Line(text, box, size, bold, [(0, len(text), box)], mono, lead, as_set if mono else "")


def superscript_marked(text: str) -> str:
    """A superscript as Pandoc's ``^…^``: a footnote mark or an exponent set small and
    raised stays apart from what it follows ("273.879.750^1^", "a^2^", "km^2^"),
    which run together would read as another number or another word."""
    core = text.strip()
    start = text.index(core)
    return f"{text[:start]}^{core}^{text[start + len(core) :]}"


def page_superscripts(data: dict) -> list[tuple[Box, str]]:
    """The superscript spans of a page's ``dict`` text: (box, text)."""
    return [
        (tuple(span["bbox"]), span["text"].strip())
        for block in data["blocks"]
        if block["type"] == 0
        for line in block["lines"]
        for span in line["spans"]
        if span["flags"] & SUPERSCRIPT and span["text"].strip()
    ]


def without_controls(text: str) -> str:
    if text.isprintable():  # no control character is printable: most spans, no regex
        return text
    return CONTROL_CHARS.sub(" ", text)


def _pictographs(span: dict, following: list[dict], *, leads: bool) -> str:
    """A pictograph font's text: Wingdings codes as the pictographs they draw, and a
    glyph without a meaning that starts a line, set apart from the text after it, as
    a list marker (an icon inside running text is never one)."""
    text = span["text"]
    if WINGDINGS_FONT.search(span["font"]):
        text = text.translate(WINGDINGS)
    glyphs = text.strip()
    if not (leads and glyphs and len(glyphs) <= 2 and MEANINGLESS.fullmatch(glyphs)):
        return text
    after = next((s for s in following if s["text"].strip()), None)
    if after is not None and after["bbox"][0] - span["bbox"][2] < 0.4 * span["size"]:
        return text
    return MARKER + " "


def _lam_alef_ordered(chars: list[dict]) -> str:
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
        x0, x1 = char["bbox"][0], char["bbox"][2]
        if (
            following is not None
            and char["c"] in ALEFS
            and following["c"] == LAM
            and x1 - x0 < 0.01
            and following["bbox"][2] - following["bbox"][0] > 0.5
            and abs(following["bbox"][2] - x0) < 0.5
        ):
            out += [LAM, char["c"]]
            i += 2
            continue
        out.append(char["c"])
        i += 1
    return "".join(out)


def _lam_alef_fix(page: pymupdf.Page, data: dict) -> None:
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


def extract_page(
    page: pymupdf.Page, images: bool
) -> tuple[list[Block], int, list[tuple[Box, str]]]:
    """Text blocks of a page (lines merged per baseline), the count of hidden lines
    dropped, and the page's superscripts (for the text of table cells). ``images``:
    whether the page lists images (the converter counts them too)."""
    data = page.get_text("dict", flags=TEXT_FLAGS)
    _lam_alef_fix(page, data)
    has_images = images or any(b["type"] == 1 for b in data["blocks"])
    blocks: list[Block] = []
    hidden = 0
    for raw in data["blocks"]:
        if raw["type"] != 0:
            continue
        lines: list[Line] = []
        for raw_line in raw["lines"]:
            line = _line_from_spans(raw_line["spans"], keep_invisible=has_images)
            if line is None:
                hidden += any(without_controls(s["text"]).strip() for s in raw_line["spans"])
                continue
            if lines and _one_marker(lines[-1], line):
                lines[-1] = _marker_line(lines[-1], line)
            elif lines and _same_row(lines[-1], line):
                lines[-1] = join_row(lines[-1], line)
            else:
                lines.append(line)
        if lines:
            blocks.append(Block(lines, union([ln.box for ln in lines])))
    return blocks, hidden, page_superscripts(data)


def _one_marker(a: Line, b: Line) -> bool:
    """Two marker glyphs drawn touching on one row (a box and its tick): one marker."""
    gap = max(a.box[0], b.box[0]) - min(a.box[2], b.box[2])
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    return (
        a.text == b.text == MARKER
        and gap <= 0.25 * max(a.size, b.size)
        and overlap > 0.5 * min(a.height, b.height)
    )


def _marker_line(a: Line, b: Line) -> Line:
    box = union([a.box, b.box])
    return Line(MARKER, box, max(a.size, b.size), a.bold and b.bold, [(0, 1, box)])


def _same_row(a: Line, b: Line) -> bool:
    """``b`` goes on ``a``'s row, to its right; not a title and small print set far
    apart on one row ("BOOKING ORDER" and its print date): those stay two lines."""
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    if overlap <= 0.5 * min(a.height, b.height) or b.box[0] < a.box[2] - 1:
        return False
    small, large = sorted((a.size, b.size))
    return large <= 1.3 * small or b.box[0] - a.box[2] <= 3 * small


def join_row(a: Line, b: Line) -> Line:
    """Two lines on one baseline become one line, keeping both source boxes."""
    text = a.text + " " + b.text
    shift = len(a.text) + 1
    parts = a.parts + [(s + shift, e + shift, bx) for s, e, bx in b.parts]
    size = a.size if len(a.text) >= len(b.text) else b.size
    return Line(text, union([a.box, b.box]), size, a.bold and b.bold, parts, a.mono and b.mono)


def body_size(pages: list[list[Block]]) -> float:
    """The most common font size by character count."""
    sizes: Counter = Counter()
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _furniture_key(line: Line, block: Block, height: float) -> tuple[str, int] | None:
    """Only lines of blocks lying wholly in the top or bottom 11% can be page furniture."""
    if 0.11 * height < block.box[3] and block.box[1] < 0.89 * height:
        return None
    return re.sub(r"\d+", "#", line.text.lower()), round(line.box[1] / 8)


def furniture_keys(pages: list[list[Block]], heights: list[float]) -> set[tuple[str, int]]:
    """Header/footer lines: same text (digits ignored) at the same height on many pages."""
    if len(pages) < 2:
        return set()
    seen: Counter = Counter()
    for blocks, height in zip(pages, heights, strict=True):
        keys = {_furniture_key(ln, b, height) for b in blocks for ln in b.lines}
        seen.update(k for k in keys if k)
    need = max(2, (len(pages) + 1) // 2)
    return {k for k, n in seen.items() if n >= need}


def _is_page_number(block: Block, blocks: list[Block], height: float) -> bool:
    """A lone number that is the first or last thing on the page, or sits in the
    margin; "Page 2 of 8" anywhere in the page's top or bottom eighth."""
    if len(block.lines) != 1 or not PAGE_NUMBER.match(block.lines[0].text):
        return False
    if _in_margin(block.box, height):
        return True
    if NAMED_PAGE_NUMBER.match(block.lines[0].text) and (
        block.box[3] < 0.125 * height or block.box[1] > 0.875 * height
    ):
        return True
    others = [b for b in blocks if b is not block and b.lines]
    return bool(others) and (
        block.box[1] >= max(b.box[3] for b in others) - 1
        or block.box[3] <= min(b.box[1] for b in others) + 1
    )


def _in_margin(box: Box, height: float, *, wholly: bool = False) -> bool:
    """``box`` reaches into (or, ``wholly``, lies inside) the top or bottom 7 % of
    the page."""
    top, bottom = 0.07 * height, 0.93 * height
    if wholly:
        return box[3] <= top or box[1] >= bottom
    return box[1] < top or box[3] > bottom


def _margin_number(line: Line, block: Block, height: float) -> bool:
    """A page number sharing a block that lies wholly in the top or bottom margin
    with a footer's text: digits ("12", "Page 3 of 8"), or two facing pages'
    numbers set far apart ("208" and "209" at a spread's two outer corners)."""
    if not _in_margin(block.box, height, wholly=True):
        return False
    if MARGIN_NUMBER.match(line.text):
        return True
    numbers = [line.text[start:end].strip() for start, end, _box in line.parts]
    numbers = [n for n in numbers if n]
    return (
        len(numbers) == 2
        and all(n.isdigit() and len(n) <= 4 for n in numbers)
        and int(numbers[1]) == int(numbers[0]) + 1
        and line.box[2] - line.box[0] > 20 * line.size  # the corners of a spread
    )


def drop_furniture(blocks: list[Block], height: float, keys: set[tuple[str, int]]) -> int:
    """Remove running headers/footers and page numbers in place; return how many lines."""
    before = [list(b.lines) for b in blocks]
    numbers = [b for b in blocks if _is_page_number(b, blocks, height)]
    dropped = 0
    for block in blocks:
        kept = (
            []
            if block in numbers
            else [
                ln
                for ln in block.lines
                if _furniture_key(ln, block, height) not in keys
                and not _margin_number(ln, block, height)
            ]
        )
        dropped += len(block.lines) - len(kept)
        block.lines = kept
        if kept:
            block.box = union([ln.box for ln in kept])
    if not any(b.lines for b in blocks):  # a page made only of repeated text is content
        for block, lines in zip(blocks, before, strict=True):
            block.lines = lines
        return 0
    blocks[:] = [b for b in blocks if b.lines or b.table is not None]
    return dropped


def _lines(blocks: list[Block]) -> int:
    return sum(max(len(b.lines), 1) for b in blocks)


def _is_prose(band: list[Block]) -> bool:
    lines = _lines(band)
    in_paragraphs = sum(len(b.lines) for b in band if len(b.lines) >= 2)
    return lines >= 4 and in_paragraphs >= 0.6 * lines


def _gutter(blocks: list[Block]) -> float | None:
    """An x that (almost) no block crosses with text on both sides: a column gap."""
    left = min(b.box[0] for b in blocks)
    right = max(b.box[2] for b in blocks)
    total = _lines(blocks)
    best: tuple[int, float] | None = None
    for x in sorted({b.box[2] + 1 for b in blocks}):
        if not left + 0.2 * (right - left) <= x <= right - 0.2 * (right - left):
            continue
        crossing = _lines([b for b in blocks if b.box[0] < x - 1 < x + 1 < b.box[2]])
        lhs = _lines([b for b in blocks if b.box[2] <= x])
        rhs = _lines([b for b in blocks if b.box[0] >= x])
        if (
            crossing <= 0.15 * total
            and min(lhs, rhs) >= 0.2 * total
            and (best is None or crossing < best[0])
        ):
            best = (crossing, x)
    return None if best is None else best[1]


def _rows(band: list[Block]) -> list[Block]:
    """Form-like layouts: read row by row, left to right; one-line cells share a line."""
    out: list[Block] = []
    pending = sorted(band, key=lambda b: (b.box[1], b.box[0]))
    while pending:
        first = pending.pop(0)
        row = [first] + [b for b in pending if b.box[1] < (first.box[1] + first.box[3]) / 2]
        pending = [b for b in pending if b not in row]
        row.sort(key=lambda b: b.box[0])
        if len(row) > 1 and all(len(b.lines) == 1 and b.table is None for b in row):
            merged = row[0].lines[0]
            for b in row[1:]:
                merged = join_row(merged, b.lines[0])
            out.append(Block([merged], merged.box))
        else:
            out.extend(row)
    return out


def reading_order(blocks: list[Block], depth: int = 0) -> list[Block]:
    """Prose columns are read one after the other; blocks crossing the gutter split bands."""
    if len(blocks) < 2:
        return list(blocks)
    x = _gutter(blocks) if depth < 3 and _is_prose(blocks) else None
    if x is None:
        return _rows(blocks)
    ordered: list[Block] = []
    band: list[Block] = []

    def flush() -> None:
        ordered.extend(reading_order([b for b in band if b.box[2] <= x], depth + 1))
        ordered.extend(reading_order([b for b in band if b.box[2] > x], depth + 1))
        band.clear()

    for block in sorted(blocks, key=lambda b: (b.box[1], b.box[0])):
        if block.box[0] < x - 1 < x + 1 < block.box[2]:
            flush()
            ordered.append(block)
        else:
            band.append(block)
    flush()
    return ordered


def join_lines(lines: list[Line], keeps_hyphen: Callable[[str, str], bool] | None = None) -> Line:
    """Lines of one paragraph become one line; words split by a hyphen are rejoined
    unless ``keeps_hyphen(text so far, next line)`` says the hyphen is a compound's."""
    text = ""
    parts: list[tuple[int, int, Box]] = []
    for line in lines:
        shift = len(text)
        if text:
            # a lowercase letter and a hyphen end the text, a lowercase letter starts
            # the line (no regex: the text grows with the paragraph)
            split = (
                len(text) > 1
                and text[-1] == "-"
                and "a" <= text[-2] <= "z"
                and "a" <= line.text[:1] <= "z"
            )
            if split and keeps_hyphen is not None and keeps_hyphen(text, line.text):
                pass  # a compound's hyphen: the next line follows it directly
            elif split:
                s, _e, bx = parts[-1]
                text = text[:-1]
                parts[-1] = (s, len(text), bx)
                shift = len(text)
            else:
                text += " "
                shift += 1
        text += line.text
        parts.extend((s + shift, e + shift, bx) for s, e, bx in line.parts)
    first = lines[0]
    return Line(
        text, union([ln.box for ln in lines]), first.size, all(ln.bold for ln in lines), parts
    )


def normalize_title(text: str) -> str:
    """Outline titles and on-page headings compared without numbering, case or spacing."""
    text = re.sub(r"^\s*((part|chapter|section)\s+)?[\dIVXivx]+([.\d]*)\s*[-.:)]?\s+", "", text)
    return re.sub(r"\W+", " ", text).strip().lower()
