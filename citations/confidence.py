"""How far an answer can be trusted, said in plain language.

Every answer carries a level (``high``, ``medium``, ``low``) and a sentence a
reader can act on. An extractive answer's level is the answer scorer's calibrated
probability that its first quote answers (``high`` from the scorer's fitted
``high_at``, chosen so that 97 % of such answers on its training split were right;
an answer below the abstention threshold quotes nothing and is ``low``). A
model-written answer's level reads its first quote: the share of the question's
words that the quote, the record it belongs to (its form's values, its table's header) and its
document and section hold; ``high`` also needs most of the words that do not
name the record (the field asked for: "insurance deductible" is not answered by
a sentence about an insurance claim). An answer that quotes nothing is ``low`` and says
which of the question's words the documents do not hold at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citations.generators import Claim, Passage
from citations.generators.extractive.coverage import question_coverage, words_missing
from citations.generators.extractive.scorer import answer_scorer

HIGH = "high"
MEDIUM = "medium"
LOW = "low"
# a model-written answer's levels: shares of the question's words its first quote (with
# its record and place) holds; set, not fitted (a model's quote is not the scorer's)
HIGH_COVERAGE = 0.75
MEDIUM_COVERAGE = 0.4


@dataclass(frozen=True)
class Confidence:
    """An answer's confidence: a level and the sentence that explains it."""

    level: str
    note: str


def _quoted(words: Sequence[str]) -> str:
    return ", ".join(f"“{word}”" for word in words)


def answer_confidence(
    *,
    question: str,
    claims: Sequence[Claim],
    passages: Sequence[Passage],
    probability: float | None = None,
) -> Confidence:
    """The confidence of an answer made of ``claims`` (in answer order) quoting
    ``passages`` (indexed by ``Claim.passage``); ``probability``: the answer scorer's,
    for an extractive answer."""
    by_index = {passage.index: passage for passage in passages}
    if probability is not None and claims and claims[0].passage in by_index:
        return _scored(question, claims[0], by_index[claims[0].passage], probability)
    if not claims or claims[0].passage not in by_index:
        if not claims:
            return _nothing_found(question, passages)
        return Confidence(MEDIUM, "The answer's quotes could not be read against the question.")
    first = claims[0]
    coverage = question_coverage(
        question, by_index[first.passage], first.source_start, first.source_end
    )
    missing = coverage.missing
    if coverage.share >= HIGH_COVERAGE and coverage.field_share >= HIGH_COVERAGE:
        return Confidence(
            HIGH, "The quoted passage holds what the question asks about, in the record it names."
        )
    lacking = f" (not in it: {_quoted(missing)})" if missing else ""
    if coverage.share >= MEDIUM_COVERAGE:
        return Confidence(
            MEDIUM,
            "The quoted passage is related to the question but does not hold all of it"
            f"{lacking}; check that it answers.",
        )
    return Confidence(
        LOW, f"The quoted passage shares little with the question{lacking}; it may not answer it."
    )


def _scored(question: str, first: Claim, passage: Passage, probability: float) -> Confidence:
    """An extractive answer's confidence, said with its probability and, below
    ``high``, the question's words its quote lacks."""
    chance = f"{probability:.0%}"
    if probability >= answer_scorer().high_at:
        return Confidence(
            HIGH,
            f"The quoted passage answers the question with a fitted probability of {chance}: "
            "it holds what the question asks about, in the record it names.",
        )
    missing = question_coverage(question, passage, first.source_start, first.source_end).missing
    lacking = f" (not in it: {_quoted(missing)})" if missing else ""
    return Confidence(
        MEDIUM,
        f"The quoted passage answers the question with a fitted probability of {chance}"
        f"{lacking}; check that it answers.",
    )


def _nothing_found(question: str, passages: Sequence[Passage]) -> Confidence:
    missing = words_missing(question, passages)
    if missing:
        return Confidence(
            LOW,
            f"Nothing in the documents mentions {_quoted(missing)}, so no passage is quoted.",
        )
    return Confidence(LOW, "No passage answers this question closely enough, so none is quoted.")
