"""A chunk's context: what it belongs to, beyond its own text.

A form's row or a table's row is one fact of a record: "GRAND TOTAL | 211,522"
means nothing without the page whose form names the vehicle, nor "78" without
its column's header. Each chunk is embedded and full-text indexed with its
context, written as labelled lines:

    Document: estimates.pdf
    Section: Estimate Totals
    Page: 2
    Record: Bruce Wayne; Batman; Batmobile; XXX
    Columns: |  | Hours | Rate | Cost |

``Record`` holds the identifying values of the record the chunk sits in: the
values of the form (a table with a blank header row whose rows are "label |
value" pairs, or a run of "Label: value" lines) that the chunk starts under on
the same page (the same section where there are no pages), else the first one
inside the chunk. ``Columns`` is the header row of the table the chunk starts
inside, when the header itself is above the chunk.

Only what is embedded and indexed grows: the chunk's text, offsets and
locations stay the exact Markdown slice. The extractive generator reads the
same lines (``context_parse``) to tell the record a question names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import regex

from documents.markdown_structure import MarkdownStructure

# a context is short beside its chunk: the embedder reads the chunk first and the
# context in what room is left (see embedding_text), the full-text index reads all
RECORD_VALUES_MAX = 16
VALUE_CHARS_MAX = 60
CONTEXT_CHARS_MAX = 600

_CELL_BORDER = re.compile(r"(?<!\\)\|")
_LETTER = regex.compile(r"\p{L}")
_RULER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
# "Make: Jeep", "- **VIN**: 1C4R…", "- **VIN:** 1C4R…": a short label (letters first)
# and a short value
_LABEL_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*)?(?P<label>\w[^:|*\n]{0,40}?)(?:\*\*)?:(?:\*\*)?\s+"
    r"(?P<value>[^\n]{1,80})$"
)
LABEL_WORDS_MAX = 4
VALUE_WORDS_MAX = 8


@dataclass(frozen=True)
class RecordAnchor:
    """A form that opens a record: where it starts and the values it holds."""

    char_start: int
    values: tuple[str, ...]


@dataclass(frozen=True)
class TableSpan:
    """A Markdown table: its range and its header row (blank for a form)."""

    char_start: int
    char_end: int
    header: str

    @property
    def is_form(self) -> bool:
        """A table whose rows are "label | value" pairs: its header row is blank (PDF
        and DOCX layout tables), or it has two columns, where the header row is the
        form's first pair (a DOCX or HTML key/value table has no header of its own:
        "| Customer name | Dmitri Silva |" heads it)."""
        return not self.header.replace("|", "").strip() or self.is_two_column

    @property
    def is_two_column(self) -> bool:
        return len(cells(self.header)) == 2


@dataclass(frozen=True)
class ParsedContext:
    """The labelled lines of a stored context."""

    document: str = ""
    section: str = ""
    record: tuple[str, ...] = ()
    columns: str = ""


def cells(row: str) -> list[str]:
    """The stripped cells of a Markdown table row, without the outer pipes' pieces."""
    pieces = [piece.strip() for piece in _CELL_BORDER.split(row)]
    if len(pieces) > 1 and not pieces[0]:
        pieces = pieces[1:]
    if len(pieces) > 1 and not pieces[-1]:
        pieces = pieces[:-1]
    return pieces


def _row_values(row: str) -> list[str]:
    """A form row's values: the right cell of each "label | value" pair whose label
    has a letter (an odd row or a row of numbers is no pairs)."""
    found = cells(row)
    if len(found) < 2 or len(found) % 2:
        return []
    return [
        value
        for label, value in zip(found[::2], found[1::2], strict=True)
        if value and _LETTER.search(label)
    ]


def label_value(line: str) -> tuple[str, str] | None:
    """The label and value of a short "Label: value" line, or None for any other line."""
    match = _LABEL_LINE.match(line)
    if not match or len(match["label"].split()) > LABEL_WORDS_MAX:
        return None
    value = match["value"].strip()
    if len(value.split()) > VALUE_WORDS_MAX:
        return None
    return match["label"].strip().casefold(), value


def tables_of(text: str) -> list[TableSpan]:
    """The tables of ``text`` with their header rows."""
    structure = MarkdownStructure(text)
    found = []
    for block in structure.blocks:
        if block.kind == "table":
            line_end = text.find("\n", block.char_start)
            header = text[block.char_start : block.char_end if line_end < 0 else line_end]
            found.append(TableSpan(block.char_start, block.char_end, header.strip()))
    return found


def record_anchors(
    text: str,
    tables: Sequence[TableSpan] | None = None,
    *,
    apart: Callable[[int, int], bool] | None = None,
) -> list[RecordAnchor]:
    """The forms of ``text`` in order: tables with a blank header row, and records of
    "Label: value" lines (``apart`` tells two offsets on different pages or sections)."""
    tables = tables_of(text) if tables is None else tables
    anchors = [
        RecordAnchor(t.char_start, tuple(_form_values(text[t.char_start : t.char_end], t)))
        for t in tables
        if t.is_form
    ]
    anchors += _label_runs(text, tables, apart)
    anchors = [a for a in anchors if a.values]
    return sorted(anchors, key=lambda a: a.char_start)


def _form_values(table: str, span: TableSpan) -> list[str]:
    """A form's values, row by row; a two-column form's header row is a pair too."""
    rows = table.splitlines()
    values: list[str] = []
    for row in ([rows[0]] if span.is_two_column and rows else []) + rows[2:]:
        values += _row_values(row)
    return values


def _label_runs(
    text: str, tables: Sequence[TableSpan], apart: Callable[[int, int], bool] | None
) -> list[RecordAnchor]:
    """Records written as "Label: value" lines outside tables (two labels or more).
    A record names each label once: a label it holds already starts the next record,
    and so does a page or section boundary (``apart(first_line, line)``); other text
    between its lines (a note, a totals line) stays in the record."""
    anchors: list[RecordAnchor] = []
    run: dict[str, str] = {}
    run_start = 0

    def close() -> None:
        if len(run) >= 2:
            anchors.append(RecordAnchor(run_start, tuple(run.values())))
        run.clear()

    for line in re.finditer(r"[^\n]+", text):
        if any(t.char_start <= line.start() < t.char_end for t in tables):
            continue
        pair = label_value(line.group())
        if pair is None:
            continue
        if pair[0] in run or (run and apart is not None and apart(run_start, line.start())):
            close()
        if not run:
            run_start = line.start()
        run[pair[0]] = pair[1]
    close()
    return anchors


def anchor_for(
    text: str,
    anchors: Sequence[RecordAnchor],
    start: int,
    end: int,
    *,
    same_record: Callable[[RecordAnchor], bool],
) -> RecordAnchor | None:
    """The record ``text[start:end]`` sits in: the last form that starts at or before
    ``start`` in the same page or section (``same_record(anchor)``), unless only
    headings stand before the first form inside the range: then that one."""
    inside = next((a for a in anchors if start < a.char_start < end), None)
    if inside is not None and not _has_body(text[start : inside.char_start]):
        return inside
    before = [a for a in anchors if a.char_start <= start and same_record(a)]
    return before[-1] if before else inside


def _has_body(text: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def record_line(values: Sequence[str]) -> str:
    """The ``Record:`` line's text: the values, short and distinct, in order."""
    kept: list[str] = []
    for value in values:
        value = " ".join(value.split())[:VALUE_CHARS_MAX]
        if value and value not in kept:
            kept.append(value)
    return "; ".join(kept[:RECORD_VALUES_MAX])


def context_text(
    *,
    document: str,
    hierarchy: Sequence[str],
    page: int | None,
    record: Sequence[str] = (),
    columns: str = "",
) -> str:
    """A chunk's context as stored: the labelled lines that have a value."""
    lines = [f"Document: {document}"] if document else []
    if hierarchy:
        lines.append("Section: " + " > ".join(hierarchy))
    if page is not None:
        lines.append(f"Page: {page}")
    if record:
        lines.append("Record: " + record_line(record))
    if columns:
        lines.append(f"Columns: {columns}")
    return "\n".join(lines)[:CONTEXT_CHARS_MAX]


def context_parse(context: str) -> ParsedContext:
    """The labelled lines of a stored context (unknown lines are ignored)."""
    fields = {}
    for line in context.splitlines():
        label, _, value = line.partition(": ")
        fields[label] = value
    record = tuple(v for v in fields.get("Record", "").split("; ") if v)
    return ParsedContext(
        document=fields.get("Document", ""),
        section=fields.get("Section", ""),
        record=record,
        columns=fields.get("Columns", ""),
    )


def embedding_text(chunk_text: str, context: str) -> str:
    """What the embedder reads for a chunk: its text, then its context. The text comes
    first so a full chunk keeps its whole text in the model's window; a short one (a
    form's rows, a table's tail) is read with the record it belongs to."""
    return f"{chunk_text}\n\n{context}" if context else chunk_text


class ChunkContexts:
    """The contexts of one Markdown text's chunks."""

    def __init__(
        self, structure: MarkdownStructure, *, document: str, line_pages: Sequence[int | None]
    ) -> None:
        self.structure = structure
        self.document = document
        self.line_pages = list(line_pages)
        self.tables = tables_of(structure.markdown)
        self.anchors = record_anchors(structure.markdown, self.tables, apart=self._apart)

    def _apart(self, first: int, second: int) -> bool:
        """Two offsets on different pages (different sections where there are none)."""
        pages = self._page(first), self._page(second)
        if pages[0] is not None or pages[1] is not None:
            return pages[0] != pages[1]
        return self.structure.section_index_at(first) != self.structure.section_index_at(second)

    def _page(self, offset: int) -> int | None:
        line = self.structure.line_of(offset)
        return self.line_pages[line - 1] if 0 < line <= len(self.line_pages) else None

    def context(self, start: int, end: int, *, hierarchy: Sequence[str]) -> str:
        page = self._page(start)
        section = self.structure.section_index_at(start)

        def same_record(anchor: RecordAnchor) -> bool:
            if page is not None:
                return self._page(anchor.char_start) == page
            return self.structure.section_index_at(anchor.char_start) == section

        anchor = anchor_for(
            self.structure.markdown, self.anchors, start, end, same_record=same_record
        )
        return context_text(
            document=self.document,
            hierarchy=hierarchy,
            page=page,
            record=anchor.values if anchor else (),
            columns=self._columns(start),
        )

    def _columns(self, start: int) -> str:
        """The header row of a headed table the chunk starts inside, below its header."""
        for table in self.tables:
            header_end = table.char_start + len(table.header)
            if header_end < start < table.char_end and not table.is_form:
                return table.header
        return ""
