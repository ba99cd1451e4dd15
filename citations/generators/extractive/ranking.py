"""A candidate sentence against the question: its similarity (with and without
the record's name) and the floors and word coverage it must reach to be quoted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citations.generators.extractive.scripts import stems
from citations.generators.extractive.thresholds import MIN_FORM_COVERAGE
from documents.fulltext import words
from retrieval.embedders import default_embedder


@dataclass(frozen=True)
class Sentence:
    passage: int
    start: int
    end: int
    text: str
    overlap: float
    prior: float
    floor: float  # the similarity to the question it needs to be quoted
    record: tuple[str, ...] = ()  # the identifying values of the record it sits in
    names: frozenset[str] = frozenset()  # the question's words that name that record
    asks: bool = True  # it is not a sentence that only names its record
    holds_field: bool = True  # it holds a question word that does not name its record


def covers(sentence: Sentence) -> bool:
    """A short form sharing a word or two with the question is a near miss, however
    close in meaning ("Home office | 30" for the office dress code), and so is one
    that holds none of the question's words but its record's name ("VIN | …" for the
    tire pressure of a named car); prose is not held to this (a sentence answers in
    words of its own)."""
    if sentence.names and not sentence.holds_field:
        return False  # of the record the question names, but not the field it asks
    return not sentence.floor or (sentence.overlap >= MIN_FORM_COVERAGE and sentence.holds_field)


def similarity_floor(sentence: Sentence) -> float:
    """A short form needs to be closer in meaning than prose, as it shares words
    easily; not once it holds the field asked in the record the question names (the
    words then say more than the cosine of a few cells)."""
    return 0.0 if sentence.names and sentence.holds_field else sentence.floor


def similarities(
    question: str, question_vector: Sequence[float], candidates: Sequence[Sentence]
) -> list[float]:
    """Each candidate's cosine with the question; for a sentence of a record the
    question names, the better of that and its cosine with the question without
    the record's name ("VIN | 1C4R…" is far from "What is the VIN of the Jeep Grand
    Cherokee?" but close to "What is the VIN of the"): the name is matched by the
    record, the rest by the sentence."""
    fields = sorted({_without(question, c.names) for c in candidates if c.names})
    texts = [c.text for c in candidates] + fields
    vectors = np.asarray(default_embedder().embed_sentences(texts))
    similarity = vectors[: len(candidates)] @ np.asarray(question_vector)
    by_field = dict(zip(fields, vectors[len(candidates) :], strict=True))
    return [
        max(float(sim), float(by_field[_without(question, c.names)] @ vectors[n]))
        if c.names
        else float(sim)
        for n, (c, sim) in enumerate(zip(candidates, similarity, strict=True))
    ]


def _without(question: str, names: frozenset[str]) -> str:
    """The question without the words that name a record (compared as stems does)."""
    return " ".join(w for w in words(question) if not (stems(w) and stems(w) <= names))
