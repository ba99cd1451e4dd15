"""The evaluation recipe of the retrieval-traceability document in ``evaluate``: its
defaults (3 paraphrases, 2 seeds), its λ target (convergent across them) as a figure
with its pass/fail, and a warning for each section with fewer than 3 gold questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from citations.models import RagTrace
from evaluation.goldsets import GoldItem
from evaluation.models import EvaluationItem, EvaluationRun
from evaluation.recipe import recipe_warnings
from tests.evaluation.conftest import Shelf

pytestmark = pytest.mark.django_db

# (question, its paraphrases); the first three are of one section, the last of another
ASKED: tuple[tuple[str, list[str]], ...] = (
    (
        "When did the 1973 oil crisis begin?",
        [
            "In which month and year did the 1973 oil crisis start?",
            "When did the oil crisis of 1973 begin?",
            "At what date did the 1973 oil crisis begin?",
            "When was the start of the 1973 oil crisis?",
        ],
    ),
    (
        "When was the second oil crisis?",
        [
            "In which year was the second oil crisis?",
            "When did the second oil crisis happen?",
            "What year did the second oil crisis take place?",
        ],
    ),
    ("What was another term used for the oil crisis?", ["What else was the oil crisis called?"]),
    ("When did the United States withdraw from the Bretton Woods Accord?", []),
)


def _gold(shelf: Shelf, folder: Path) -> Path:
    """The shelf's gold lines of those questions, with the paraphrases."""
    lines = {
        item["question"]: item for item in map(json.loads, shelf.gold.read_text().splitlines())
    }
    path = folder / "recipe.jsonl"
    path.write_text(
        "".join(
            json.dumps({**lines[question], "paraphrases": paraphrases}) + "\n"
            for question, paraphrases in ASKED
        )
    )
    return path


def _lambda_from_traces(run: EvaluationRun) -> tuple[float | None, int]:
    """The λ figure computed again from the trace rows of each item's answer."""
    by_line: dict[int, list[EvaluationItem]] = {}
    for item in EvaluationItem.objects.filter(run=run):
        by_line.setdefault(item.line, []).append(item)
    measured = [
        items
        for items in by_line.values()
        if len({i.variant for i in items}) - 1 >= 3 and len({i.seed for i in items}) >= 2
    ]
    convergent = sum(
        all(
            set(RagTrace.objects.filter(query=i.query_id).values_list("lambda_state", flat=True))
            == {"convergent"}
            for i in items
        )
        for items in measured
    )
    return (round(convergent / len(measured), 4) if measured else None), len(measured)


def test_evaluate_runs_the_recipe_and_reports_lambda_with_its_pass_or_fail(
    shelf: Shelf, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    call_command("evaluate", app="SQuAD", gold=str(_gold(shelf, tmp_path)), out=str(out))

    run = EvaluationRun.objects.latest("created_at")
    assert run.seeds == 2  # the recipe's seeds, and its paraphrases, by default
    assert [len(i["paraphrases"]) for i in run.gold_items] == [3, 3, 1, 0]
    assert run.total == 2 * (4 + 4 + 2 + 1) == EvaluationItem.objects.filter(run=run).count()

    report = json.loads((out / "report.json").read_text())
    value, measured = _lambda_from_traces(run)
    assert measured == 2  # the two questions asked with 3 paraphrases, under 2 seeds
    assert report["lambda_questions"] == measured
    assert value is not None and report["lambda_convergent"] == value
    target = report["targets"]["lambda_convergent"]
    assert target == {"op": ">=", "target": 1.0, "value": value, "met": value >= 1.0}
    markdown = (out / "report.md").read_text()
    assert f"| `lambda_convergent` | >= 1.0 | {value} | {'yes' if value >= 1.0 else 'NO'} |" in (
        markdown
    )
    printed = capsys.readouterr()
    assert f"lambda_convergent: {value} (>= 1.0: {'met' if value >= 1.0 else 'MISSED'})" in (
        printed.out
    )

    # the section asked once is warned of; the one asked three times is not
    thin = (
        "section '1973 oil crisis > Paragraph 3' of '1973_oil_crisis' has 1 gold question; "
        "the recipe asks 3 to 5 per section"
    )
    assert thin in report["warnings"] and f"- warning: {thin}" in markdown
    assert f"warning: {thin}" in printed.err
    assert not any("Paragraph 1'" in w for w in report["warnings"])
    short = "2 of 4 answerable questions have fewer than 3 paraphrases"
    assert any(short in w for w in report["warnings"]), report["warnings"]


def test_answers_that_find_nothing_miss_the_lambda_target(shelf: Shelf, tmp_path: Path) -> None:
    gold = _gold(shelf, tmp_path)
    gold.write_text(gold.read_text().splitlines()[0] + "\n")  # 3 paraphrases asked
    out = tmp_path / "report"
    shelf.squad.min_score, saved = 0.99, shelf.squad.min_score  # nothing is retrieved
    shelf.squad.save()
    try:
        with pytest.raises(CommandError, match="missed: lambda_convergent") as missed:
            call_command(
                "evaluate", app="SQuAD", gold=str(gold), out=str(out), require=["lambda_convergent"]
            )
    finally:
        shelf.squad.min_score = saved
        shelf.squad.save()
    assert missed.value.returncode == 2
    report = json.loads((out / "report.json").read_text())
    assert report["questions"] == 8 and report["lambda_questions"] == 1
    assert report["targets"]["lambda_convergent"] == {
        "op": ">=",
        "target": 1.0,
        "value": 0.0,
        "met": False,
    }
    assert (report["lambda_convergent"], 1) == _lambda_from_traces(
        EvaluationRun.objects.latest("created_at")
    )


def test_one_seed_does_not_measure_lambda_and_says_so(shelf: Shelf, tmp_path: Path) -> None:
    out = tmp_path / "report"
    gold = _gold(shelf, tmp_path)
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1, paraphrases=0, out=str(out))
    report = json.loads((out / "report.json").read_text())
    assert report["questions"] == len(ASKED)
    assert report["lambda_convergent"] is None and report["lambda_questions"] == 0
    assert report["targets"]["lambda_convergent"]["met"] is None  # nothing to measure it on
    assert any(w.startswith("1 seed: the λ target") for w in report["warnings"])


@pytest.mark.parametrize("paraphrases", [-1, 11])
def test_a_paraphrase_count_out_of_range_records_nothing(
    shelf: Shelf, tmp_path: Path, paraphrases: int
) -> None:
    before = EvaluationRun.objects.count()
    with pytest.raises(CommandError, match="--paraphrases must be between 0 and 10"):
        call_command(
            "evaluate", app="SQuAD", gold=str(_gold(shelf, tmp_path)), paraphrases=paraphrases
        )
    assert EvaluationRun.objects.count() == before


def _item(line: int, section: str | None, paraphrases: int = 3, **fields: object) -> GoldItem:
    expected = {"document": "handbook.md"} | ({"section": section} if section else {})
    return GoldItem(
        line=line,
        question=f"question {line}?",
        paraphrases=tuple(f"paraphrase {n}?" for n in range(paraphrases)),
        expected=expected,
        **fields,  # type: ignore[arg-type]
    )


def test_sections_are_counted_per_document_and_only_when_a_question_names_one() -> None:
    items = [
        _item(1, "Leave"),
        _item(2, "Leave"),
        _item(3, "Leave"),
        _item(4, "Travel"),
        _item(5, None),  # names no section: counts for none
        GoldItem(
            line=6, question="q?", paraphrases=("a?", "b?", "c?"), expected={"section": "Leave"}
        ),
    ]
    warnings = recipe_warnings(items=items, seeds=2)
    assert warnings == [
        "section 'Travel' of 'handbook.md' has 1 gold question; the recipe asks 3 to 5 per section",
        # the same heading in no named document is another section
        "section 'Leave' has 1 gold question; the recipe asks 3 to 5 per section",
    ]


def test_a_gold_set_in_the_recipe_s_shape_is_warned_of_nothing() -> None:
    items = [_item(n, "Leave") for n in range(1, 4)]
    items.append(_item(4, None, paraphrases=0, answerable=False))  # λ speaks of answers only
    assert recipe_warnings(items=items, seeds=2) == []
    assert recipe_warnings(items=items, seeds=1) == [
        "1 seed: the λ target is measured over 2 seeds (the recipe's), so this run does not "
        "measure it"
    ]
