"""The retrieval-traceability document's evaluation recipe, its numbers named once:

    1. Prepare a gold set with 3 to 5 questions per section.
    2. Run 3 paraphrases and 2 seeds per question.

and its λ target, "λ convergent across 3 paraphrases and 2 seeds". ``evaluate`` asks
this many by default; a run that departs from the recipe is warned of what it cannot
measure (report.json, report.md and the command's output).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from evaluation.goldsets import GoldItem

RECIPE_PARAPHRASES = 3  # asked per question, beside the question itself
RECIPE_SEEDS = 2
SECTION_QUESTIONS_MIN = 3  # gold questions per section, "3 to 5"
SECTION_QUESTIONS_MAX = 5


def measures_lambda(*, paraphrases: int, seeds: int) -> bool:
    """Whether a question asked so often is one the λ target speaks of."""
    return paraphrases >= RECIPE_PARAPHRASES and seeds >= RECIPE_SEEDS


def recipe_warnings(*, items: Sequence[GoldItem], seeds: int) -> list[str]:
    """What a run of ``items`` (as asked: paraphrases kept) under ``seeds`` lacks of the
    recipe: sections with fewer than 3 gold questions, and questions λ is not measured
    on (fewer than 3 paraphrases, or fewer than 2 seeds)."""
    warnings = [
        _thin(place, count) for place, count in _sections(items) if count < SECTION_QUESTIONS_MIN
    ]
    answerable = [i for i in items if i.answerable]
    if answerable and seeds < RECIPE_SEEDS:
        warnings.append(
            f"{seeds} seed: the λ target is measured over {RECIPE_SEEDS} seeds (the "
            "recipe's), so this run does not measure it"
        )
    short = sum(len(i.paraphrases) < RECIPE_PARAPHRASES for i in answerable)
    if short and seeds >= RECIPE_SEEDS:
        warnings.append(
            f"{short} of {len(answerable)} answerable questions have fewer than "
            f"{RECIPE_PARAPHRASES} paraphrases (the recipe's): λ is not measured on them"
        )
    return warnings


def _sections(items: Sequence[GoldItem]) -> list[tuple[tuple[str, str], int]]:
    """(document, section) of every gold question that names a section, counted, in the
    order the gold set first names them."""
    counted = Counter(
        (i.expected.get("document", ""), i.expected["section"])
        for i in items
        if "section" in i.expected
    )
    return list(counted.items())


def _thin(place: tuple[str, str], count: int) -> str:
    document, section = place
    where = f"section {section!r}" + (f" of {document!r}" if document else "")
    questions = "question" if count == 1 else "questions"
    return (
        f"{where} has {count} gold {questions}; the recipe asks "
        f"{SECTION_QUESTIONS_MIN} to {SECTION_QUESTIONS_MAX} per section"
    )
