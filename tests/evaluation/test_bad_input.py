"""Every bad input is refused with its line number before anything is recorded; an
expected document that does not exist is a warning, and its item counts as unmatched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.models import EvidenceEntry
from citations.models import QueryExecution
from evaluation.models import EvaluationItem, EvaluationRun
from tests.evaluation.conftest import Shelf

pytestmark = pytest.mark.django_db

GOOD = {"question": "Where is Victoria?", "expected": {"document": "Victoria_(Australia)"}}


def _counts() -> tuple[int, int, int, int]:
    return (
        EvaluationRun.objects.count(),
        EvaluationItem.objects.count(),
        QueryExecution.objects.count(),
        EvidenceEntry.objects.count(),
    )


def _refused(tmp_path: Path, text: str, match: str, **options: object) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(text)
    before = _counts()
    with pytest.raises(CommandError, match=match):
        call_command(
            "evaluate", gold=str(gold), out=str(tmp_path / "r"), **{"app": "SQuAD", **options}
        )
    assert _counts() == before, "something was recorded"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (json.dumps(GOOD) + "\n{not json\n", r"line 2: not JSON"),
        (
            json.dumps(GOOD) + "\n" + json.dumps([1, 2]) + "\n",
            r"line 2: an item must be a JSON object",
        ),
        ('{"question": "a"}\n\n{"paraphrases": ["b"]}\n', r"line 3: no question"),
        ('{"question": "   "}\n', r"line 1: 'question' must not be empty"),
        ('{"question": 7}\n', r"line 1: 'question' must be a string"),
        ('{"question": "a", "expected": {"answer": []}}\n', r"line 1: expected.answer"),
        ('{"question": "a", "expected": {"page": 3}}\n', r"line 1: unknown expected field"),
        ('{"question": "a", "answerable": "no"}\n', r"line 1: 'answerable' must be true or false"),
        ('{"question": "a", "paraphrases": "b"}\n', r"line 1: 'paraphrases' must be a list"),
        ("\n\n", r"no items"),
        ("id,question\n1,Where?\n", r"line 1: not JSON.*\n.*line 2: not JSON"),
    ],
)
def test_a_bad_gold_file_is_refused_with_its_line_numbers(
    shelf: Shelf, tmp_path: Path, text: str, match: str
) -> None:
    _refused(tmp_path, text, match)


def test_a_file_that_is_not_utf8_is_refused(shelf: Shelf, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(b'{"question": "caf\xe9"}\n')
    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("evaluate", app="SQuAD", gold=str(gold))


def test_an_unknown_app_is_refused(shelf: Shelf, tmp_path: Path) -> None:
    _refused(tmp_path, json.dumps(GOOD) + "\n", r"unknown app 'Nope'", app="Nope")


def test_an_app_of_another_organization_is_refused(shelf: Shelf, tmp_path: Path) -> None:
    _refused(
        tmp_path,
        json.dumps(GOOD) + "\n",
        r"app 'Rules' belongs to another organization",
        app="Rules",
        organization="Acme",
    )
    _refused(
        tmp_path,
        json.dumps(GOOD) + "\n",
        r"app .* belongs to another organization",
        app=str(shelf.globex_app.pk),
        organization="Acme",
    )


def test_bad_seeds_record_nothing(shelf: Shelf, tmp_path: Path) -> None:
    _refused(tmp_path, json.dumps(GOOD) + "\n", r"--seeds must be between 1 and 5", seeds=0)


def test_an_unknown_expected_document_is_warned_and_counted_unmatched(
    shelf: Shelf, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    missing = {
        "question": "What is the capital of Victoria?",
        "expected": {"document": "atlas.pdf"},
    }
    gold.write_text(json.dumps(GOOD) + "\n" + json.dumps(missing) + "\n")
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1, out=str(tmp_path / "r"))
    assert (
        "line 2: expected document 'atlas.pdf' is not in the data sources"
        in capsys.readouterr().err
    )
    run = EvaluationRun.objects.latest("created_at")
    assert run.warnings == [
        "line 2: expected document 'atlas.pdf' is not in the data sources of app 'SQuAD'; "
        "the item counts as unmatched"
    ]
    unmatched = EvaluationItem.objects.get(run=run, line=2)
    assert unmatched.verdict == "unmatched" and unmatched.matched_citations == 0
    assert run.outcome.figures["unmatched"] == 1


def test_goldset_from_squad_refuses_what_is_not_squad(tmp_path: Path) -> None:
    source = tmp_path / "x.json"
    source.write_text('{"data": 3}')
    with pytest.raises(CommandError, match="not a SQuAD file"):
        call_command("goldset_from_squad", str(source), out=str(tmp_path / "g.jsonl"))
    source.write_text("no json")
    with pytest.raises(CommandError, match="not JSON"):
        call_command("goldset_from_squad", str(source), out=str(tmp_path / "g.jsonl"))
    assert not (tmp_path / "g.jsonl").exists()


def test_a_missed_required_target_exits_2(shelf: Shelf, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"question": "Where is Victoria?", "expected": {"document": "rules.md"}}) + "\n"
    )
    with pytest.raises(CommandError, match="target.s. missed: citation_match_rate") as missed:
        call_command(
            "evaluate",
            app="SQuAD",
            gold=str(gold),
            seeds=1,
            out=str(tmp_path / "r"),
            require=["citation_match_rate"],
        )
    assert missed.value.returncode == 2
    assert (tmp_path / "r" / "report.json").exists()  # the report is written first
