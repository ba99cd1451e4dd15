"""The record, table header and place (document, section) a sentence is read
with, and how much of the question the sentence then holds."""

from __future__ import annotations

from dataclasses import dataclass

from citations.generators import Passage
from citations.generators.extractive.scripts import stems
from citations.generators.extractive.sentences import is_table_row, label_of
from documents.chunk_context import (
    RecordAnchor,
    TableSpan,
    cells,
    context_parse,
    record_anchors,
    tables_of,
)


@dataclass(frozen=True)
class Reading:
    """How one sentence relates to the question, its record taken into account."""

    overlap: float  # share of the question's words it, its record or its place holds
    record: tuple[str, ...]
    names: frozenset[str]
    asks: bool
    holds_field: bool
    field_share: float  # share of the question's words but the record's name it holds
    covered: frozenset[str] = frozenset()  # the question's words it, its record or place hold


class Layout:
    """The records and table headers of one passage: each sentence belongs to the
    last form before it in the passage, else to the record of the chunk's context;
    a row of a headed table has that header's words (its field names)."""

    def __init__(self, passage: Passage) -> None:
        self.text = passage.text
        self.context = context_parse(passage.context)
        self.tables: list[TableSpan] = tables_of(self.text) if "|" in self.text else []
        self.anchors: list[RecordAnchor] = record_anchors(self.text, self.tables)
        self.place = (
            stems(passage.title) | stems(self.context.document) | stems(self.context.section)
        )

    def record(self, start: int) -> tuple[str, ...]:
        before = [a for a in self.anchors if a.char_start <= start]
        return before[-1].values if before else self.context.record

    def header(self, start: int, line: str) -> str:
        for table in self.tables:
            if table.char_start <= start < table.char_end:
                below = start >= table.char_start + len(table.header)
                return table.header if below and not table.is_form else ""
        return self.context.columns if is_table_row(line) else ""

    def line(self, start: int) -> str:
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", start)
        return self.text[line_start : line_end if line_end >= 0 else len(self.text)]

    def read(self, asked: set[str], start: int, end: int) -> Reading:
        """The sentence's words, its record's and its place's against the question's.

        A record's value names it ("Grand Cherokee"), a label never does ("GRAND
        TOTAL" of the Jeep's estimate is a field). A row of a headed table outside
        any form is a record of its own ("Honda | Civic | 2HGF…" in a fleet
        register): its cells name it and its header holds the fields; under a form
        (an estimate's totals) a row is one of the form's fields.
        """
        line = self.line(start)
        sentence, header = self.text[start:end], self.header(start, line)
        record = self.record(start)
        if header and not record:
            record = tuple(cells(line))
            own, names = stems(header), frozenset(asked & stems(line))
        else:
            own = stems(sentence) | stems(header)
            names = frozenset(asked & (stems(" ".join(record)) - stems(label_of(sentence))))
        covered = asked & (own | names | self.place)
        held = asked & own
        return Reading(
            overlap=len(covered) / (len(asked) or 1),
            record=record,
            names=names,
            asks=not held or bool(held - names),
            holds_field=bool(held - names),
            field_share=len((held | (asked & self.place)) - names) / (len(asked - names) or 1),
            covered=frozenset(covered),
        )
