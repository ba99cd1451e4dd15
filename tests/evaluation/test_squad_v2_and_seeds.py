"""A SQuAD v2.0 gold set reports abstention on its unanswerable questions; ``--seeds 2``
asks everything twice and gets the same hits and the same answers."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

import pytest
from django.core.management import call_command

from citations.models import QueryExecution, QuotedSource, RetrievalHit
from evaluation.models import EvaluationItem, EvaluationRun
from tests.evaluation.conftest import Shelf, gold_sample

pytestmark = pytest.mark.django_db

IMPOSSIBLE = [
    "How long should sourdough bread rise before baking?",
    "Which chess opening did the world champion play in 2031?",
    "What colour is the CEO's bicycle?",
]


def _v2_file(shelf: Shelf, folder: Path) -> Path:
    """The first paragraph of one article with two real questions and three
    unanswerable ones (``is_impossible``), as SQuAD v2.0 writes them."""
    article = json.loads(shelf.squad_file.read_text())["data"][0]
    paragraph = dict(article["paragraphs"][0])
    impossible = [
        {"id": f"x{n}", "question": q, "answers": [], "is_impossible": True}
        for n, q in enumerate(IMPOSSIBLE)
    ]
    paragraph["qas"] = paragraph["qas"][:2] + impossible
    path = folder / "v2.json"
    path.write_text(
        json.dumps({"version": "v2.0", "data": [{**article, "paragraphs": [paragraph]}]})
    )
    return path


def test_a_v2_gold_set_reports_abstention_on_unanswerable_items(
    shelf: Shelf, tmp_path: Path
) -> None:
    gold = tmp_path / "v2.jsonl"
    call_command("goldset_from_squad", str(_v2_file(shelf, tmp_path)), out=str(gold))
    items = [json.loads(line) for line in gold.read_text().splitlines()]
    assert [i.get("answerable", True) for i in items] == [True, True, False, False, False]
    assert "answer" not in items[2]["expected"]

    out = tmp_path / "report"
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1, out=str(out))
    report = json.loads((out / "report.json").read_text())
    unanswerable = [i for i in report["items"] if not i["answerable"]]
    quiet = [
        i for i in unanswerable if not QuotedSource.objects.filter(query_id=i["query_id"]).exists()
    ]
    assert report["abstention_rate"] == round(len(quiet) / 3, 4)
    assert report["abstention_rate"] >= 2 / 3
    assert {i["verdict"] for i in quiet} == {"abstained"}
    answerable = [i for i in report["items"] if i["answerable"]]
    silent = [
        i for i in answerable if not QuotedSource.objects.filter(query_id=i["query_id"]).exists()
    ]
    assert report["false_abstention_rate"] == round(len(silent) / 2, 4)


def _hits(query_id: UUID) -> list[tuple]:
    return list(
        RetrievalHit.objects.filter(query_id=query_id)
        .order_by("k_pos")
        .values_list("chunk_id", "k_pos", "k_final", "score_norm")
    )


def test_two_seeds_give_identical_hits_and_answers(shelf: Shelf, tmp_path: Path) -> None:
    gold = gold_sample(shelf, tmp_path, every=41, count=5)
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=2, out=str(tmp_path / "r"))
    run = EvaluationRun.objects.latest("created_at")
    assert run.outcome.figures["seed_agreement"] == 1.0
    first = EvaluationItem.objects.filter(run=run, seed=1).order_by("line", "variant")
    second = EvaluationItem.objects.filter(run=run, seed=2).order_by("line", "variant")
    assert len(first) == len(second) == 5
    for one, two in zip(first, second, strict=True):
        assert one.query_id is not None and two.query_id is not None
        assert one.query_id != two.query_id  # asked twice, recorded twice
        assert _hits(one.query_id) == _hits(two.query_id) != []
        answers = QueryExecution.objects.filter(pk__in=[one.query_id, two.query_id])
        assert len({a.answer for a in answers}) == 1
