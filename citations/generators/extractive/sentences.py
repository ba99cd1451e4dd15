"""A chunk cut into verbatim candidate sentences (form rows also into their
"label | value" pairs), and the kind of line each is."""

from __future__ import annotations

import re

import regex

from citations.generators.extractive.answer_types import FORMULA_LINE
from citations.generators.extractive.scripts import word_count
from citations.generators.extractive.thresholds import MIN_WORDS
from documents.chunk_context import cells, label_value
from documents.markdown_structure import MarkdownStructure

# Arabic "؟" and Urdu "۔" end sentences too; Chinese and Japanese full stops
# ("。", "！", "？", fullwidth and halfwidth ones) end one with no space after them:
# after the last of a run ("？！"), with any closing quotes or brackets that follow
_CJK_STOPS = "\u3002\uff01\uff1f\uff0e\uff61"
_CJK_CLOSERS = "\u300d\u300f\u3011\u300b\u3009\uff09\u201d\u2019\uff63"
_SENTENCE_END = re.compile(
    r"(?<=[.!?\u061f\u06d4])[\"')\]]*\s+"
    rf"|(?<=[{_CJK_STOPS}])(?![{_CJK_STOPS}0-9\uff10-\uff19])[\"')\]{_CJK_CLOSERS}]*\s*"
)
_LEAD = re.compile(r"(?:\s*(?:[-*+>]|\d{1,3}[.)])\s+|\s*\|?\s*)")
_KEY_VALUE = re.compile(r"\s*(?:[-*+]\s+)?\*\*[^*\n]+\*\*:\s+\S")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_LETTER = regex.compile(r"\p{L}")


def is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _is_structural(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("#") or set(stripped) <= set("|-: ")


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The cells of the table row ``text[start:end]`` as stripped spans (an empty
    cell is an empty span), without the outer pipes' empty pieces."""
    borders = [m.start() for m in _CELL_BORDER.finditer(text, start, end)]
    edges = [start - 1, *borders, end]
    cells = []
    for left, right in zip(edges, edges[1:], strict=False):
        a, b = left + 1, right
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        cells.append((a, b))
    if borders and not text[start : borders[0]].strip():
        cells = cells[1:]
    if borders and not text[borders[-1] + 1 : end].strip():
        cells = cells[:-1]
    return cells


def _form_rows(text: str) -> set[int]:
    """Offsets of the body rows of tables whose header row is blank: a form (PDF
    and DOCX layout tables), where each row holds "label | value" pairs."""
    structure = MarkdownStructure(text)
    rows: set[int] = set()
    for block in structure.blocks:
        first = structure.line_of(block.char_start)
        header = text[block.char_start : structure.line_end(first)]
        if block.kind == "table" and not header.replace("|", "").strip():
            last = structure.line_of(block.char_end)
            rows.update(structure.line_starts[line - 1] for line in range(first + 2, last + 1))
    return rows


def _pairs(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """A form row's "label | value" spans, or None if the row is not cut so: an odd
    number of cells, fewer than four, or a label without a letter ("2021 | 10.2 |
    11.4 | 12.0" is a data row of a table converted without its header)."""
    cells = _cells(text, start, end)
    if len(cells) < 4 or len(cells) % 2:
        return None
    pairs = [
        (label, value)
        for label, value in zip(cells[::2], cells[1::2], strict=True)
        if label[1] > label[0] and value[1] > value[0]
    ]
    if not pairs or any(not _LETTER.search(text, label[0], label[1]) for label, _ in pairs):
        return None
    return [(label[0], value[1]) for label, value in pairs]


def _form_pairs(text: str) -> dict[int, list[tuple[int, int]]]:
    """The rows of ``text`` that are cut into "label | value" pairs, by offset."""
    found = {}
    for row in _form_rows(text) if "|" in text else ():
        pairs = _pairs(text, row, len(text) if (end := text.find("\n", row)) < 0 else end)
        if pairs is not None:
            found[row] = pairs
    return found


def sentences_of(text: str) -> list[tuple[int, int]]:
    """Verbatim sentence spans of a chunk, headings and table rulers skipped.

    A row of a form (a table with a blank header row, four or more cells, labels
    with letters) also yields its "label | value" pairs: "Email | … | VIN | 1C4R…"
    mixes two facts, and each pair is much closer in meaning to the question it
    answers (0.64 against 0.38 for "What is the VIN of the vehicle?"). The whole
    row stays a candidate: a table whose header the converter could not tell is
    converted with a blank header row too.
    """
    return [(start, end) for start, end, _pair in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int, bool]]:
    """:func:`sentences_of`'s spans, each saying whether it is a form's pair."""
    spans: list[tuple[int, int, bool]] = []
    pairs = _form_pairs(text)
    for line_match in re.finditer(r"[^\n]+", text):
        if _is_structural(line_match.group()):
            continue
        line, offset = line_match.group(), line_match.start()
        spans += [(a, b, True) for a, b in pairs.get(offset, ()) if word_count(text[a:b]) >= 2]
        # a row or a "Label: value" line is one fact: "Policy no. | INS-…" is not two
        short_form = is_table_row(line) or _is_key_value(line)
        ends = [] if short_form else [m.end() for m in _SENTENCE_END.finditer(line)]
        cuts = [0, *ends, len(line)]
        for piece_start, piece_end in zip(cuts, cuts[1:], strict=False):
            start, end = offset + piece_start, offset + piece_end
            lead = _LEAD.match(text, start, end)
            start = lead.end() if lead else start
            while end > start and text[end - 1] in " |\t":
                end -= 1
            formula = bool(FORMULA_LINE.match(line))  # an equation is short, and a claim
            if word_count(text[start:end]) >= (2 if short_form or formula else MIN_WORDS):
                spans.append((start, end, False))
    return spans


def label_of(sentence: str) -> str:
    """The label of a row, a pair or a "Label: value" line (its first cell, or the
    text before the colon); "" for prose."""
    if "|" in sentence:
        return cells(sentence)[0]
    pair = label_value(sentence)
    return pair[0] if pair else ""


def label_in(sentence: str, kind: str, *, header: str = "") -> str:
    """The label a candidate's value is given under: a pair's, a "Label: value"
    line's, the first cell of a row holding one value besides it ("Total | | 100"),
    or of any row of a table whose header leaves its first column unnamed (a totals
    table, "| | Hours | Rate | Cost |": "GRAND TOTAL | | | 5,738"); "" for prose and
    a register's row (its first cell is a value, its labels are the header's)."""
    if kind in {"pair", "key_value"}:
        return label_of(sentence)
    if kind != "row":
        return ""
    row = cells(sentence)
    first = row[0] if row and _LETTER.search(row[0]) else ""
    if header:
        return first if not cells(header)[0] else ""
    return first if len([cell for cell in row if cell]) == 2 else ""


def _is_key_value(line: str) -> bool:
    """A "**key**: value" line of a JSON file, or a form's short "Label: value" line."""
    return bool(_KEY_VALUE.match(line)) or label_value(line) is not None


def sentence_kind(chunk: str, start: int, end: int) -> str:
    """A candidate's kind, as the answer scorer weighs it: a table "row", a short
    "key_value" line ("**provider**: MediCare", "Phone: …"), or "prose"."""
    line_start = chunk.rfind("\n", 0, start) + 1
    line_end = chunk.find("\n", start)
    line = chunk[line_start : line_end if line_end >= 0 else len(chunk)]
    if is_table_row(line):
        return "row"
    if _is_key_value(line) and word_count(chunk[start:end]) < 2 * MIN_WORDS:
        return "key_value"
    return "prose"
