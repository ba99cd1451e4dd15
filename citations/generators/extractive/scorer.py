"""The answer scorer: the probability that a candidate answers its question.

Gradient-boosted trees over :data:`~citations.generators.extractive.features.FEATURES`
(a candidate's kind, record and value type change what its closeness means: a prose
sentence in a form's record is no answer to a field, a SQuAD sentence may well be),
fitted by ``manage.py train_answer_scorer`` on generated forms in many layouts, SQuAD
prose and questions whose answering document was withheld, and kept in
``answer_scorer.json`` beside this module with the thresholds chosen on its training
split (abstention for precision, ``high`` confidence, a second quote) and the report
of its held-out split. Nothing is fitted at run time: the file is read once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from citations.generators.extractive.features import FEATURES

MODEL_PATH = Path(__file__).with_name("answer_scorer.json")


class ScorerMismatch(RuntimeError):
    """The model file was fitted on other features than this code computes."""


@dataclass(frozen=True)
class AnswerScorer:
    features: tuple[str, ...]
    baseline: float
    # each tree as rows [feature, threshold, left, right, leaf value]; a leaf has
    # feature -1; a value at or below the threshold goes left
    trees: tuple[tuple[tuple[float, ...], ...], ...]
    # below this probability the answer quotes nothing (chosen for precision)
    abstain_below: float
    # at or above it an answer is of ``high`` confidence
    high_at: float
    # a further quote needs this probability (it must add an answer the first may lack)
    further_at: float

    def probabilities(self, rows: Sequence[Sequence[float]]) -> list[float]:
        found = []
        for row in rows:
            z = self.baseline
            for tree in self.trees:
                node = tree[0]
                while node[0] >= 0:
                    node = tree[int(node[2] if row[int(node[0])] <= node[1] else node[3])]
                z += node[4]
            found.append(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z)))))
        return found


def scorer_from(document: dict) -> AnswerScorer:
    if tuple(document["features"]) != FEATURES:
        raise ScorerMismatch(
            f"{MODEL_PATH.name} was fitted on {document['features']}, the code computes "
            f"{list(FEATURES)}: run `make train-scorer`"
        )
    thresholds = document["thresholds"]
    return AnswerScorer(
        features=tuple(document["features"]),
        baseline=float(document["baseline"]),
        trees=tuple(tuple(tuple(node) for node in tree) for tree in document["trees"]),
        abstain_below=float(thresholds["abstain_below"]),
        high_at=float(thresholds["high_at"]),
        further_at=float(thresholds["further_at"]),
    )


def abstention_threshold(app_threshold: float | None) -> float:
    """The least probability an answer quotes at: the app's own, else the fitted one."""
    return answer_scorer().abstain_below if app_threshold is None else app_threshold


@cache
def answer_scorer() -> AnswerScorer:
    """The committed scorer (read once per process)."""
    return scorer_from(json.loads(MODEL_PATH.read_text()))
