"""What the answer scorer knows of a candidate: its closeness in meaning and words to
the question, the record it sits in, the kind of value it holds and the rank of its
passage, each relative to the other candidates of the same question.

The same function feeds the scorer at answer time and its training
(``evaluation.scorer_training``), so the model is fitted on exactly what it reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import regex

from citations.generators import Passage
from citations.generators.extractive.answer_types import asked_types, holds_type
from citations.generators.extractive.coverage import passages_hold
from citations.generators.extractive.ranking import Sentence
from citations.generators.extractive.scripts import stems, word_count
from documents.fulltext import words

FEATURES = (
    "similarity",
    "similarity_gap",
    "label_similarity",
    "has_label",
    "label_words",
    "in_record",
    "overlap",
    "overlap_gap",
    "rare_overlap",
    "rare_overlap_gap",
    "own_share",
    "field_share",
    "names_share",
    "names_best",
    "names_other",
    "holds_field",
    "kind_prose",
    "kind_row",
    "kind_pair",
    "kind_key_value",
    "type_asked",
    "type_held",
    "type_missing",
    "prose_type_missing",
    "entity_share",
    "absent_share",
    "passage_rank",
    "score_norm",
    "score_gap",
    "log_words",
)
_ENTITY = regex.compile(r"\d|\p{Lu}")


def _entities(question: str) -> set[str]:
    """The stems of the question's names and numbers (capitalised words past the
    first, words with a digit): the words a passage must hold to be about them."""
    found: set[str] = set()
    for n, word in enumerate(words(question)):
        if (n > 0 and word[:1].isupper()) or any(ch.isdigit() for ch in word):
            found |= stems(word)
    return found


def _acronyms(question: str) -> set[str]:
    """The question's all-capital words ("VIN", "SKU"): a label may spell them out."""
    return {w.casefold() for w in words(question) if len(w) >= 2 and w.isupper() and w.isalpha()}


def label_words(label: str, field: set[str], acronyms: set[str]) -> float:
    """The share of a label's words the question asks with ("Policy no." for "policy
    number"), a label spelling out the question's acronym ("Vehicle identification
    number" for "VIN") counting whole."""
    if not label:
        return 0.0
    initials = "".join(w[:1] for w in words(label)).casefold()
    if any(a in initials or a in stems(label) for a in acronyms):
        return 1.0
    own = stems(label)
    return len(own & field) / len(own) if own else 0.0


def feature_rows(
    question: str,
    candidates: Sequence[Sentence],
    similarity: Sequence[float],
    label_similarity: Sequence[float],
    passages: Sequence[Passage],
) -> list[list[float]]:
    """One row of :data:`FEATURES` per candidate, in the candidates' order."""
    asked = stems(question) or {""}
    entities = _entities(question) & asked
    kinds = asked_types(question)
    acronyms = _acronyms(question)
    absent_share = len(asked - passages_hold(passages)) / len(asked)
    best_similarity = max(similarity, default=0.0)
    best_overlap = max((c.overlap for c in candidates), default=0.0)
    best_rare = max((c.rare_overlap for c in candidates), default=0.0)
    most_names = max((len(c.names) for c in candidates), default=0)
    by_index = {p.index: p for p in passages}
    best_score = max((p.score_norm for p in passages), default=0.0)
    rows = []
    for candidate, sim, label_sim in zip(candidates, similarity, label_similarity, strict=True):
        own = stems(candidate.text)
        own_passage = by_index.get(candidate.passage)
        place = stems(own_passage.title) | stems(own_passage.context) if own_passage else set()
        type_held = bool(kinds) and holds_type(candidate.value, kinds, question)
        reach = own | place | stems(" ".join(candidate.record))
        rows.append(
            [
                sim,
                sim - best_similarity,
                label_sim,
                float(bool(candidate.label)),
                label_words(candidate.label, asked - candidate.names, acronyms),
                float(bool(candidate.record)),
                candidate.overlap,
                candidate.overlap - best_overlap,
                candidate.rare_overlap,
                candidate.rare_overlap - best_rare,
                len(asked & own) / len(asked),
                candidate.field_share,
                len(candidate.names) / len(asked),
                float(most_names > 0 and len(candidate.names) == most_names),
                float(most_names > 0 and len(candidate.names) < most_names),
                float(candidate.holds_field),
                float(candidate.kind == "prose"),
                float(candidate.kind == "row"),
                float(candidate.kind == "pair"),
                float(candidate.kind == "key_value"),
                float(bool(kinds)),
                float(type_held),
                float(bool(kinds) and not type_held),
                float(bool(kinds) and not type_held and candidate.kind == "prose"),
                len(entities & reach) / len(entities) if entities else 1.0,
                absent_share,
                1.0 / (1 + candidate.passage),
                candidate.prior,
                candidate.prior - best_score,
                math.log1p(word_count(candidate.text)),
            ]
        )
    return rows
