"""Reading runs: progress, and two runs side by side."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.models import EvaluationItem, EvaluationRun


@dataclass(frozen=True)
class Comparison:
    """One question asked in both runs (same gold line, seed and variant)."""

    line: int
    seed: int
    variant: int
    question: str
    before: EvaluationItem | None
    after: EvaluationItem | None

    @property
    def changed(self) -> bool:
        verdicts = (getattr(self.before, "verdict", None), getattr(self.after, "verdict", None))
        return verdicts[0] != verdicts[1]


def run_progress(run: EvaluationRun) -> tuple[int, int]:
    """(questions answered, questions planned)."""
    return run.items.count(), run.total


def _keyed(run: EvaluationRun) -> dict[tuple[int, int, int], EvaluationItem]:
    items = run.items.defer("answer", "cited", "hit_ids").order_by("position")
    return {(i.line, i.seed, i.variant): i for i in items}


def runs_compare(*, before: EvaluationRun, after: EvaluationRun) -> list[Comparison]:
    """Every question of either run, matched by gold line, seed and variant."""
    old, new = _keyed(before), _keyed(after)
    rows = []
    for key in sorted(old.keys() | new.keys()):
        item = new.get(key) or old[key]
        rows.append(Comparison(*key, item.question, old.get(key), new.get(key)))
    return rows
