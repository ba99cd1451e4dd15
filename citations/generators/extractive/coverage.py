"""How much of a question a quote, or a set of passages, holds: the words the
answer's confidence is judged on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citations.generators import Passage
from citations.generators.extractive.records import Layout
from citations.generators.extractive.scripts import stems
from documents.fulltext import words


@dataclass(frozen=True)
class Coverage:
    """How much of a question a quote holds, read with its record and place."""

    share: float  # of the question's words
    field_share: float  # of the question's words but those naming the quote's record
    missing: list[str]  # the question's words it lacks, as the question writes them


def question_coverage(question: str, passage: Passage, start: int, end: int) -> Coverage:
    """How much of the question ``passage.text[start:end]`` holds, read with its
    record, its table's header, its document and section."""
    asked = stems(question)
    layout = Layout(passage)
    reading = layout.read(asked, start, end)
    header = layout.header(start, layout.line(start))
    covered = stems(passage.text[start:end]) | stems(header) | reading.names | layout.place
    return Coverage(reading.overlap, reading.field_share, _missing(question, covered))


def words_missing(question: str, passages: Sequence[Passage]) -> list[str]:
    """The question's words that no passage (its text, record or place) holds."""
    return _missing(question, passages_hold(passages))


def passages_hold(passages: Sequence[Passage]) -> set[str]:
    """The stems the passages hold in their text, title or record (their context)."""
    held: set[str] = set()
    for passage in passages:
        held |= stems(passage.text) | stems(passage.title) | stems(passage.context)
    return held


def _missing(question: str, held: set[str]) -> list[str]:
    missing: list[str] = []
    for word in words(question):
        stems_of_word = stems(word)
        if stems_of_word and not stems_of_word <= held and word not in missing:
            missing.append(word)
    return missing
