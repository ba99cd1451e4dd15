"""PDF to Markdown with PyMuPDF: headings, lists, tables and a box for every line.

One ``get_text("dict")`` pass per page plus plain geometry (see
``_pdf_layout``). Headings come from the outline when it matches the pages,
otherwise from font size and weight. Every body line records the PDF boxes it
came from, so a chunk can later be shown and checked on its page.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from operator import attrgetter

import pymupdf

from documents.converters._hyphenation import LineEndHyphens
from documents.converters._mdbuild import MarkdownBuilder, escape_line_start, table_cell
from documents.converters._pdf_aligned import aligned_tables
from documents.converters._pdf_annotations import MAX_ANNOTATIONS, Note, page_notes
from documents.converters._pdf_layout import (
    BULLET,
    MARKER_ONLY,
    NUMBERED,
    TEXT_FLAGS,
    Block,
    Box,
    Line,
    body_size,
    drop_furniture,
    extract_page,
    furniture_keys,
    join_lines,
    join_row,
    normalize_title,
    reading_order,
    union,
    without_controls,
)
from documents.converters._pdf_tables import RuledTable, ruled_tables
from documents.converters._pdf_words import PageWordIndex, Word
from documents.converters.base import Conversion, ConversionError, ProgressReport

pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)

NO_TEXT_IMAGES = "no text layer: this PDF contains only images; OCR is not supported yet"
NO_TEXT_EMPTY = "no text layer: this PDF has no text to extract"


def _open(data: bytes) -> pymupdf.Document:
    if not data:
        raise ConversionError("could not read this PDF: the file is empty")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # mupdf raises several types for damaged input
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


def _page_notes(page: pymupdf.Page, budget: int) -> list[Note]:
    """The page's annotation notes (``_pdf_annotations``); none if they are damaged."""
    try:
        return page_notes(page, budget) if budget > 0 else []
    except Exception:  # noqa: BLE001 - damaged annotations: the page's are left out
        return []


def _comments_write(md: MarkdownBuilder, notes: list[Note]) -> None:
    """The notes after the body, under ``# Comments``, each boxed on its page."""
    for index, note in enumerate(notes):
        if index == 0:
            md.heading(1, "Comments", note.page_number)
        md.line(note.text, note.page_number, [(0, len(note.text), note.page_number, note.box)])
    md.blank()


def _silent(done: int, total: int) -> None:
    """No one asked for progress."""


def _clean_meta(value: object) -> str:
    return "".join(ch for ch in str(value or "") if ch.isprintable()).strip()


def _table_blocks(page: pymupdf.Page) -> list[Block]:
    """Ruled tables, found from the page's rules alone (see ``_pdf_tables``)."""
    try:
        found = ruled_tables(page)
    except Exception:  # damaged drawing commands: the page is still read as text
        return []
    return [Block([], t.bbox, table=t) for t in found]


def _inside(line: Line, box: tuple[float, float, float, float]) -> bool:
    cx, cy = (line.box[0] + line.box[2]) / 2, (line.box[1] + line.box[3]) / 2
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def _remove_table_text(blocks: list[Block], tables: list[Block]) -> None:
    for block in blocks:
        kept = [ln for ln in block.lines if not any(_inside(ln, t.box) for t in tables)]
        if len(kept) < len(block.lines):
            block.lines_before_tables = block.line_count
        block.lines = kept
        if block.lines:
            block.box = union([ln.box for ln in block.lines])
    blocks[:] = [b for b in blocks if b.lines]


def _attach_markers(blocks: list[Block]) -> list[Block]:
    """A lone bullet or '.1' block joins the text block on its baseline to the right."""
    out: list[Block] = []
    consumed: set[int] = set()
    for i, block in enumerate(blocks):
        if i in consumed:
            continue
        if len(block.lines) == 1 and MARKER_ONLY.match(block.lines[0].text):
            marker = block.lines[0]
            for j, other in enumerate(blocks):
                if j == i or j in consumed or other.table is not None:
                    continue
                first = other.lines[0]
                same_row = abs(first.box[1] - marker.box[1]) < 0.6 * max(marker.height, 1)
                if same_row and 0 <= first.box[0] - marker.box[2] < 80:
                    other.lines[0] = join_row(marker, first)
                    other.box = union([other.box, marker.box])
                    consumed.add(i)
                    break
        if i not in consumed:
            out.append(block)
    return out


class _Headings:
    """Decides which lines are headings: outline titles if trusted, else font size/weight."""

    def __init__(self, doc: pymupdf.Document, pages: list[list[Block]]) -> None:
        self.body = body_size(pages)
        self.toc: dict[int, list[tuple[int, str]]] = {}
        try:
            toc = doc.get_toc(simple=True)
        except Exception:
            toc = []
        for level, title, page in toc:
            if normalize_title(title):
                self.toc.setdefault(page, []).append((level, normalize_title(title)))
        self.toc_entries = len(toc)
        self.use_toc = bool(toc) and self._toc_matches(pages) >= 0.5 * len(toc)
        self._font_levels(pages)

    def _toc_matches(self, pages: list[list[Block]]) -> int:
        matched = 0
        for page_no, entries in self.toc.items():
            if not 1 <= page_no <= len(pages):
                continue
            texts = {normalize_title(ln.text) for b in pages[page_no - 1] for ln in b.lines}
            matched += sum(1 for _lvl, title in entries if title in texts)
        return matched

    def _font_levels(self, pages: list[list[Block]]) -> None:
        sizes: Counter = Counter()
        total = bold_lines = lines = 0
        for blocks in pages:
            for block in blocks:
                for ln in block.lines:
                    total += len(ln.text)
                    lines += 1
                    bold_lines += ln.bold and ln.size < self.body * 1.15
                    if ln.size >= self.body * 1.15 and len(block.lines) <= 4:
                        sizes[ln.size] += len(ln.text)
        big = sorted((s for s, n in sizes.items() if n < 0.3 * total), reverse=True)[:5]
        self.levels = {s: i + 1 for i, s in enumerate(big)}
        self.bold_level = min(6, len(big) + 1)
        self.bold_ok = bold_lines <= 0.25 * max(lines, 1)

    def classifier(self, page_no: int) -> Callable[[Line, Block], int]:
        pending = list(self.toc.get(page_no, []))

        def level(line: Line, block: Block) -> int:
            if not re.search(r"[^\W\d_]", line.text) or len(line.text) > 150:
                return 0
            if self.use_toc:
                norm = normalize_title(line.text)
                for k, (lvl, title) in enumerate(pending):
                    if title == norm:
                        del pending[k]
                        return min(lvl, 6)
                return 0
            if line.size in self.levels and block.line_count <= 4:
                return self.levels[line.size]
            if (
                self.bold_ok
                and line.bold
                and line.size >= self.body * 0.95
                and block.line_count <= 2
                and _bold_title_so_far(line, block)
            ):
                return self.bold_level
            return 0

        return level


def _bold_title_so_far(line: Line, block: Block) -> bool:
    """``line`` could be a bold title, and no earlier line of its block is too long to
    be one: the short last line of a bold paragraph is not a heading on its own, while
    "Schedule 2:" above "Payment Terms" still lets the second line be one."""
    for earlier in block.lines:
        if not (earlier.bold and len(earlier.text.split()) <= 12):
            return False
        if earlier is line:
            return not line.text.rstrip().endswith((".", ",", ":", ";"))
    return False


def _indented(line: Line, left: float) -> bool:
    return line.box[0] > left + 0.8 * line.size


def _new_paragraph(
    prev: Line,
    line: Line,
    following: Line | None,
    block: Block,
    first: Line,
    *,
    line_per_sentence: bool = False,
) -> bool:
    """Inside one block: a first-line indent (not a hanging one), a short sentence end,
    or a line back at the edge after the last line of a hanging indent (run-in items
    numbered "1 Title." with their text indented under the title); ``first`` is the
    first line of the paragraph ``prev`` ends. In a block set a sentence per line
    (:func:`_line_per_sentence`) every sentence's end before a capital is one."""
    if line_per_sentence and prev.text.rstrip().endswith(_SENTENCE_END) and line.text[:1].isupper():
        return True
    left = block.box[0]
    indent = (
        _indented(line, left)
        and not _indented(prev, left)
        and (following is None or not _indented(following, left))
    )
    short_end = prev.box[2] < block.box[2] - 0.15 * (block.box[2] - block.box[0])
    # a hanging indent's last line need not be short: it only stops before the edge
    hanging_ended = (
        prev.box[2] < block.box[2] - 2 * prev.size
        and prev is not first
        and not _indented(first, left)
        and _indented(prev, left)
        and not _indented(line, left)
    )
    return (
        indent or hanging_ended or (short_end and prev.text.rstrip().endswith((".", "!", "?", ":")))
    )


def _line_per_sentence(block: Block) -> bool:
    """Lines set one sentence each, ragged on the right (a list of maxims, a poem):
    four or more lines, nearly all ending a sentence, most short of the edge."""
    lines = block.lines
    if len(lines) < 4:
        return False
    ends = sum(ln.text.rstrip().endswith(_SENTENCE_END) for ln in lines)
    full = sum(ln.box[2] >= block.box[2] - 1 for ln in lines)
    return ends >= 0.8 * len(lines) and full <= 0.5 * len(lines)


def _starts_item(prev: Line | None, line: Line, block: Block, kind: str) -> bool:
    """Bullets always start an item; '(1)'-style numbers only at a line start after a break."""
    if BULLET.match(line.text):
        return True
    if not NUMBERED.match(line.text):
        return False
    return (
        prev is None
        or kind == "li"
        or prev.box[2] < block.box[2] - 0.15 * (block.box[2] - block.box[0])
    )


def _continues_item(prev: Line, line: Line, first: Line, block: Block) -> bool:
    """A list item's next line: indented under its text, or (an item set without a
    hanging indent) a lowercase continuation of a line that ran to the block's edge."""
    if line.box[0] > first.box[0] + 1:
        return True
    wrapped = prev.box[2] >= block.box[2] - 0.05 * (block.box[2] - block.box[0])
    return wrapped and line.text[:1].islower()


def _listing_line(lines: list[Line], i: int) -> bool:
    """A fixed-width line is a listing's when a neighbour in its block is fixed-width
    too, or it is a block of its own (a listing MuPDF cut into blocks): a lone
    address or name set in a fixed-width font inside prose stays prose."""
    return (
        len(lines) == 1
        or (i > 0 and lines[i - 1].mono)
        or (i + 1 < len(lines) and lines[i + 1].mono)
    )


def _groups(
    block: Block, level_of: Callable[[Line, Block], int], code: bool = False
) -> list[tuple[str, int, list[Line]]]:
    """Split a block's lines into headings, list items, paragraphs and, where
    ``code``, listings (lines set in a fixed-width font)."""
    groups: list[tuple[str, int, list[Line]]] = []
    prev: Line | None = None
    lines = block.lines
    per_sentence = _line_per_sentence(block)
    for i, line in enumerate(lines):
        level = level_of(line, block)
        kind, last = ("", None) if not groups else (groups[-1][0], groups[-1])
        gap = prev is not None and line.box[1] - prev.box[3] > 0.8 * max(prev.height, 1)
        following = lines[i + 1] if i + 1 < len(lines) else None
        if level:
            if kind == "h" and last[1] == level and not gap:
                last[2].append(line)
            else:
                groups.append(("h", level, [line]))
        elif code and line.mono and _listing_line(lines, i):
            if kind == "code":
                last[2].append(line)
            else:
                groups.append(("code", 0, [line]))
        elif _starts_item(prev, line, block, kind):
            groups.append(("li", 0, [line]))
        elif kind == "li" and not gap and _continues_item(prev, line, last[2][0], block):
            last[2].append(line)
        elif (
            kind in ("p", "pc")
            and not gap
            and not _new_paragraph(
                prev, line, following, block, last[2][0], line_per_sentence=per_sentence
            )
        ):
            if _ragged(prev, lines, block):
                groups.append(("pc", 0, [line]))  # a ragged line (address, receipt): keep it a line
            else:
                last[2].append(line)
        else:
            groups.append(("p", 0, [line]))
        prev = line
    return groups


def _emit_text(
    md: MarkdownBuilder,
    page_no: int,
    kind: str,
    level: int,
    lines: list[Line],
    hyphens: LineEndHyphens,
    *,
    continues: bool = False,
) -> None:
    """One group as Markdown; ``continues``: the paragraph before it (on the page
    before) goes on in it, so it follows on the next line with no blank between."""
    line = join_lines(lines, hyphens.keeps_hyphen)
    parts = [(s, e, page_no, bx) for s, e, bx in line.parts]
    if kind == "h":
        md.heading(level, line.text, page_no, parts)
        return
    text, shift = line.text, 0
    if kind == "li":
        bullet = BULLET.match(text)
        if bullet:
            text, shift = "- " + text[bullet.end() :], 2 - bullet.end()
        elif not re.match(r"\d{1,3}[.)] ", text):
            text, shift = "- " + text, 2
    else:
        escaped = escape_line_start(text)
        text, shift = escaped, len(escaped) - len(text)
    if kind != "pc" and not continues:
        md.blank(page_no)
    md.line(
        text,
        page_no,
        [(max(s + shift, 0), e + shift, p, b) for s, e, p, b in parts if e + shift > 0],
    )


def _listings_stand_out(pages: list[list[Block]]) -> bool:
    """Fixed-width lines are code listings only where they are the exception: a
    receipt or a typed letter set wholly in Courier is prose, not code."""
    mono = total = 0
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                total += len(line.text)
                mono += len(line.text) if line.mono else 0
    return 0 < mono < 0.3 * total


def _emit_code(md: MarkdownBuilder, page_no: int, lines: list[Line]) -> None:
    """A fenced block, a Markdown line per listing line (blank ones too), each
    indented by its distance from the listing's left edge in characters of the
    font, its inner blanks as set (aligned comments stay aligned)."""
    left = min(line.box[0] for line in lines)
    widths = sorted(
        (ln.box[2] - ln.box[0]) / (ln.lead + len(ln.spaced or ln.text)) for ln in lines if ln.text
    )
    advance = max(widths[len(widths) // 2], 0.1)
    longest_run = max((len(run) for ln in lines for run in re.findall("`+", ln.text)), default=0)
    fence = "`" * max(3, longest_run + 1)
    md.blank(page_no)
    md.line(fence, page_no)
    previous: Line | None = None
    for line in lines:
        if previous is not None and line.box[1] - previous.box[3] > 0.8 * previous.height:
            md.line("", page_no)  # a blank line of the listing
        previous = line
        indent = " " * min(round((line.box[0] - left) / advance) + line.lead, 200)
        text = line.spaced or line.text
        parts = [(0, len(text), line.box)] if line.spaced else line.parts
        shift = len(indent)
        md.line(
            indent + text, page_no, [(s + shift, e + shift, page_no, box) for s, e, box in parts]
        )
    md.line(fence, page_no)
    md.blank(page_no)


# MuPDF's word list cuts words where right-to-left and left-to-right text meet and
# at U+FFFD; a cell holding such text is read from its own clipped text page
_CUT_BY_WORD_LIST = re.compile("[\u0590-\u0900\ufb1d-\ufefc\ufffd]")
_BORDER_TOLERANCE = 0.5  # points a word may reach past a cell border


class _PageWords(PageWordIndex):
    """The page's words, read once for all its tables.

    A clipped ``get_text`` per cell parsed the whole page again for every cell
    (seven times per page of an invoice: 55% of its conversion time). A cell whose
    text the word list cannot give as a clip would (a word across its border, as
    when neighbouring cells' text touches; right-to-left text) is still clipped."""

    def __init__(self, page: pymupdf.Page, superscripts: list[tuple[Box, str]]) -> None:
        super().__init__(page)
        if superscripts:
            self.words = [_raised_marked(word, superscripts) for word in self.words]

    def inside(self, box: tuple | None) -> str:
        """The text of the cell ``box``, whitespace-normalised."""
        if not box:
            return ""
        x0, y0, x1, y1 = box
        band = self.band(y0, y1)
        cell = [w for w in band if x0 <= w.centre_x <= x1]
        if any(
            w.crosses(x0, _BORDER_TOLERANCE) or w.crosses(x1, _BORDER_TOLERANCE) for w in band
        ) or any(_CUT_BY_WORD_LIST.search(w.text) for w in cell):
            text = self.page.get_text("text", clip=box, flags=TEXT_FLAGS)
        else:
            text = " ".join(w.text for w in sorted(cell, key=attrgetter("order")))
        return table_cell(without_controls(text))


def _raised_marked(word: Word, superscripts: list[tuple[Box, str]]) -> Word:
    """A word of the word list holding a superscript of the page, marked as the
    page's lines mark it (``superscript_marked``): the word list runs a footnote
    mark into the number before it ("273.879.7501") or an exponent into its unit
    ("(km2)"). Where the raised text occurs more than once in the word, the
    occurrence nearest its place on the page is the one."""
    text = word.text
    for (x0, y0, x1, y1), raised in superscripts:
        if x0 < word.left - 0.5 or x1 > word.right + 0.5 or y1 < word.top or y0 > word.bottom:
            continue
        found = [i for i in range(len(text)) if text.startswith(raised, i)]
        if not found:
            continue
        width = max(word.right - word.left, 1e-6)
        estimate = (x0 - word.left) / width * len(text)
        at = min(found, key=lambda i: abs(i - estimate))
        return word._replace(text=f"{text[:at]}^{raised}^{text[at + len(raised) :]}")
    return word


def _emit_table(md: MarkdownBuilder, words: _PageWords, page_no: int, table: RuledTable) -> int:
    """Cell text is re-read from each cell box so characters keep their visual order.

    A cell merged across some of its row's columns ("Europe" over four countries)
    fills each of them, with its box, as a DOCX's merged cells do, so every column
    reads whole; a cell spanning the whole row (a title) stays in the first."""
    rows = [[words.inside(box) for box in row.cells] for row in table.rows]
    if not any(any(row) for row in rows):
        return 0
    width = max(len(r) for r in rows)
    md.blank(page_no)
    for i, (cells, geom) in enumerate(zip(rows, table.rows, strict=True)):
        boxes = list(geom.cells)
        if sum(box is not None for box in boxes) > 1:  # partly merged: fill the covered
            for j in range(1, len(boxes)):
                if boxes[j] is None and boxes[j - 1] is not None:
                    boxes[j], cells[j] = boxes[j - 1], cells[j - 1]
        text, spans = "|", []
        for j in range(width):
            cell = cells[j] if j < len(cells) else ""
            text += " "
            if cell:
                spans.append((len(text), len(text) + len(cell), page_no, tuple(boxes[j])))
            text += cell + " |"
        md.line(text, page_no, spans)
        if i == 0:
            md.line("|" + " --- |" * width, page_no)
    md.blank(page_no)
    return 1


def _continues(prev: tuple, group: tuple, blocks: list[Block]) -> bool:
    """A paragraph PyMuPDF split into two blocks: same column, no gap, lowercase
    start; in right-to-left script, which has no case (MuPDF gives each wrapped
    line of Arabic a block of its own), a row before that runs to the column's far
    end (the column: the page's ``blocks`` sharing the right edge) without a
    sentence's end, and the same right edge and type size."""
    if prev[0] not in ("p", "pc", "li") or group[0] != "p":
        return False
    last, first = prev[2][-1], group[2][0]
    gap = first.box[1] - last.box[3]
    if not -1 <= gap <= 0.8 * max(last.height, 1):
        return False
    if _mostly_right_to_left(last.text) and _mostly_right_to_left(first.text):
        # the row before runs to the column's far (left) end without a sentence's end,
        # and the next starts at the same right edge, in the same type
        right = _row_edge(prev[2], last, max, 2)
        left = min(
            (b.box[0] for b in blocks if b.table is None and abs(b.box[2] - right) <= 2),
            default=min(ln.box[0] for ln in prev[2]),
        )
        wrapped = _row_edge(prev[2], last, min, 0) <= left + 0.15 * (right - left)
        return (
            wrapped
            and not last.text.rstrip().endswith((*_SENTENCE_END, "؟", "۔"))
            and abs(_row_edge(group[2], first, max, 2) - right) <= 2
            and abs(first.size - last.size) <= 0.1 * max(last.size, 1)
        )
    return (
        first.box[0] >= prev[2][0].box[0] - 2
        and first.box[0] <= last.box[2]
        and first.text[:1].islower()
    )


def _row_edge(lines: list[Line], line: Line, pick: Callable, side: int) -> float:
    """An edge (``side`` 0: left, 2: right; ``pick`` min or max) of the row ``line``
    is set in (MuPDF may cut a row of right-to-left text into lines at Latin words)."""
    return pick(ln.box[side] for ln in lines if ln.box[1] < line.box[3] and ln.box[3] > line.box[1])


def _ragged(prev: Line, lines: list[Line], block: Block) -> bool:
    """``prev`` ends its row well short of the block's far edge (an address, a
    receipt): the line after it is a line of its own. The far edge is the left one
    in right-to-left script, where a row MuPDF cut into lines counts whole."""
    width = block.box[2] - block.box[0]
    if _mostly_right_to_left(prev.text):
        return _row_edge(lines, prev, min, 0) > block.box[0] + 0.15 * width
    return prev.box[2] < block.box[2] - 0.15 * width


# letters of right-to-left scripts: Hebrew, Arabic, Syriac, Thaana, N'Ko, and their forms
_RIGHT_TO_LEFT_LETTER = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


def _mostly_right_to_left(text: str) -> bool:
    """Most of the line's letters are of a right-to-left script (Arabic, Hebrew)."""
    if not _RIGHT_TO_LEFT_LETTER.search(text):
        return False  # most lines: one scan in C
    letters = [unicodedata.bidirectional(ch) for ch in text if ch.isalpha()]
    return bool(letters) and 2 * sum(kind in ("R", "AL") for kind in letters) > len(letters)


_SENTENCE_END = (".", "!", "?", ":", ";", '."', ".”", ".)", "?”", "!”")


def _open_ended(group: tuple) -> bool:
    """A paragraph cut off, not finished: of two lines or more (one line's width
    says nothing: a footnote, a caption), its last runs to the paragraph's right
    edge and ends without a sentence's end."""
    if group[0] != "p" or len(group[2]) < 2:
        return False
    lines = group[2]
    last = lines[-1]
    width = max(ln.box[2] for ln in lines) - min(ln.box[0] for ln in lines)
    full = last.box[2] >= max(ln.box[2] for ln in lines) - 0.15 * width
    return full and not last.text.rstrip().endswith(_SENTENCE_END)


def _carries_on(prev: tuple, group: tuple) -> bool:
    """``group`` opens mid-sentence (a lowercase first letter) in the type of the
    paragraph ``prev`` was cut from (not a footnote's smaller size)."""
    if group[0] != "p" or not group[2][0].text[:1].islower():
        return False
    last, first = prev[2][-1], group[2][0]
    return abs(first.size - last.size) <= 0.1 * max(last.size, 1)


def _continues_in_next_column(prev: tuple, group: tuple) -> bool:
    """A paragraph cut at the foot of a column that goes on at the top of the next:
    the new column starts higher up and to the right of where the paragraph stopped."""
    if not (_open_ended(prev) and _carries_on(prev, group)):
        return False
    last, first = prev[2][-1], group[2][0]
    return first.box[1] < last.box[1] and first.box[0] > (last.box[0] + last.box[2]) / 2


def _page_groups(
    ordered: list[Block], level_of: Callable[[Line, Block], int], code: bool = False
) -> list[tuple]:
    groups: list[tuple] = []
    for block in ordered:
        if block.table is not None:
            groups.append(("table", 0, block.table))
            continue
        for group in _groups(block, level_of, code):
            if groups and (
                _continues(groups[-1], group, ordered)
                or _continues_in_next_column(groups[-1], group)
                or _same_listing(groups[-1], group)
            ):
                groups[-1][2].extend(group[2])
            else:
                groups.append(group)
    # a fixed-width line alone, neither beside nor under another, is prose
    return [("p", 0, g[2]) if g[0] == "code" and len(g[2]) == 1 else g for g in groups]


def _same_listing(prev: tuple, group: tuple) -> bool:
    """Blocks MuPDF cut one listing into (at an indent, at a blank line): the next
    starts below the last, within three lines, over the same columns."""
    if prev[0] != "code" or group[0] != "code":
        return False
    last, first = prev[2][-1], group[2][0]
    gap = first.box[1] - last.box[3]
    left = min(ln.box[0] for ln in prev[2])
    right = max(ln.box[2] for ln in prev[2])
    return -1 <= gap <= 3 * max(last.height, 1) and first.box[0] < right and first.box[2] > left


class PdfConverter:
    """PDF to Markdown; raises ``ConversionError`` for encrypted, empty or broken files."""

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
    # one row stay two lines, a block set a sentence per line keeps its lines apart
    version = "1.7.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        doc = _open(data)
        try:
            return self._convert(doc, progress or _silent)
        finally:
            doc.close()

    def _convert(self, doc: pymupdf.Document, progress: ProgressReport) -> Conversion:
        # two passes over the pages: reading a page's text and layout is about three
        # quarters of its time, writing its Markdown the last quarter
        total = doc.page_count
        pages: list[list[Block]] = []
        superscripts: list[list[tuple[Box, str]]] = []
        notes: list[Note] = []
        heights: list[float] = []
        hidden = images = 0
        failed: list[int] = []
        for page in doc:
            try:
                drawn = bool(page.get_images())
                blocks, dropped, raised = extract_page(page, drawn)
                images += drawn
            except Exception:
                blocks, dropped, raised = [], 0, []
                failed.append(page.number + 1)
            pages.append(blocks)
            superscripts.append(raised)
            if page.number + 1 not in failed:  # read while the page is loaded
                notes += _page_notes(page, MAX_ANNOTATIONS - len(notes))
            heights.append(page.rect.height)
            hidden += dropped
            progress(3 * len(pages) // 4, total)
        if not any(pages) or not any(ln.text.strip() for b in sum(pages, []) for ln in b.lines):
            if len(failed) == doc.page_count:
                raise ConversionError(
                    "could not read this PDF: no page could be parsed (damaged file)"
                )
            raise ConversionError(NO_TEXT_IMAGES if images else NO_TEXT_EMPTY)
        headings = _Headings(doc, pages)
        hyphens = LineEndHyphens([ln.text for blocks in pages for b in blocks for ln in b.lines])
        keys = furniture_keys(pages, heights)
        md = MarkdownBuilder()
        furniture = tables = listings = 0
        code = _listings_stand_out(pages)
        # (page, paragraph) cut off at a page's end: its blank line waits until the
        # next page shows whether the paragraph goes on there
        cut: tuple[int, tuple] | None = None
        for index, blocks in enumerate(pages):
            page_no = index + 1
            furniture += drop_furniture(blocks, heights[index], keys)
            page = doc[index]
            table_blocks = _table_blocks(page) if page_no not in failed else []
            if table_blocks:
                _remove_table_text(blocks, table_blocks)
            borderless = [Block([], t.bbox, table=t) for t in aligned_tables(blocks)]
            if borderless:
                _remove_table_text(blocks, borderless)
                table_blocks += borderless
            ordered = reading_order(_attach_markers(blocks) + table_blocks)
            level_of = headings.classifier(page_no)
            words = None
            groups = _page_groups(ordered, level_of, code)
            continues = cut is not None and bool(groups) and _carries_on(cut[1], groups[0])
            if cut is not None and not continues:
                md.blank(cut[0])
            cut = None
            for position, (kind, level, content) in enumerate(groups):
                if kind == "table":
                    words = words or _PageWords(page, superscripts[index])
                    tables += _emit_table(md, words, page_no, content)
                elif kind == "code":
                    listings += 1
                    _emit_code(md, page_no, content)
                else:
                    first = continues and position == 0
                    _emit_text(md, page_no, kind, level, content, hyphens, continues=first)
            if groups and _open_ended(groups[-1]):
                cut = (page_no, groups[-1])  # no blank yet: the next page may go on with it
            else:
                md.blank(page_no)
            progress((3 * total + page_no) // 4, total)
        if cut is not None:
            md.blank(cut[0])
        _comments_write(md, notes)
        markdown, line_pages, spans = md.build(paged=True)
        meta = {k: _clean_meta(v) for k, v in (doc.metadata or {}).items() if _clean_meta(v)}
        meta.update(
            outline_entries=headings.toc_entries,
            headings_from="outline" if headings.use_toc else "font",
            body_font_size=headings.body,
            tables=tables,
            code_listings=listings,
            hidden_text_lines_dropped=hidden,
            header_footer_lines_dropped=furniture,
            pages_failed=failed,
            comments=len(notes),
        )
        return Conversion(
            markdown=markdown,
            converter=self.name,
            converter_version=self.version,
            line_pages=line_pages,
            spans=spans,
            page_count=doc.page_count,
            metadata=meta,
        )
