"""A candidate sentence against the question: its reading (record, words held) and
its similarity in meaning, with and without the record's name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citations.generators.extractive.scripts import stems
from citations.generators.extractive.sentences import label_of
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
    record: tuple[str, ...] = ()  # the identifying values of the record it sits in
    names: frozenset[str] = frozenset()  # the question's words that name that record
    asks: bool = True  # it is not a sentence that only names its record
    holds_field: bool = True  # it holds a question word that does not name its record
    field_share: float = 0.0  # share of the question's words but the record's name it holds
    kind: str = "prose"  # "prose", a table "row", a form's "pair", a "key_value" line
    label: str = ""  # a pair's, a two-cell row's or a "Label: value" line's label
    # the share of the question's words it (its record, its place) holds, each word
    # weighted by how rare it is among the candidates: "Ortega" says more than "number"
    rare_overlap: float = 0.0
    # no passage retrieved (its text, title or record) holds any of the question's words:
    # the documents do not speak of what it asks, whatever a quote's closeness
    unasked: bool = False

    @property
    def value(self) -> str:
        """What the candidate says beyond its label: a pair's or a "Label: value"
        line's value, a row's or a sentence's whole text."""
        if self.kind in {"pair", "key_value"}:
            label = label_of(self.text)
            at = self.text.casefold().find(label.casefold()) if label else -1
            return self.text[at + len(label) :] if at >= 0 else self.text
        return self.text


def similarities(
    question: str, question_vector: Sequence[float], candidates: Sequence[Sentence]
) -> tuple[list[float], list[float]]:
    """Each candidate's cosine with the question, and its label's with the field the
    question asks (0 for a candidate without a label).

    For a sentence of a record the question names, the cosine is the better of that
    and its cosine with the question without the record's name ("VIN | 1C4R…" is far
    from "What is the VIN of the Jeep Grand Cherokee?" but close to "What is the VIN
    of the"): the name is matched by the record, the rest by the sentence. A label is
    compared with that question without the name ("Telephone" with "What is the
    phone number of"): a form's label says which field its value is."""
    fields = sorted({_without(question, c.names) for c in candidates if c.names})
    labels = sorted({c.label for c in candidates if c.label})
    texts = [c.text for c in candidates] + fields + labels
    vectors = np.asarray(default_embedder().embed_sentences(texts))
    asked = np.asarray(question_vector)
    similarity = vectors[: len(candidates)] @ asked
    by_field = dict(
        zip(fields, vectors[len(candidates) : len(candidates) + len(fields)], strict=True)
    )
    by_label = dict(zip(labels, vectors[len(candidates) + len(fields) :], strict=True))
    sims, label_sims = [], []
    for n, (c, sim) in enumerate(zip(candidates, similarity, strict=True)):
        field = by_field[_without(question, c.names)] if c.names else asked
        sims.append(max(float(sim), float(field @ vectors[n])) if c.names else float(sim))
        label_sims.append(float(by_label[c.label] @ field) if c.label else 0.0)
    return sims, label_sims


def _without(question: str, names: frozenset[str]) -> str:
    """The question without the words that name a record (compared as stems does)."""
    return " ".join(w for w in words(question) if not (stems(w) and stems(w) <= names))
