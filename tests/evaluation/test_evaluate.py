"""``evaluate`` on a gold set from the shared SQuAD sample: each figure of the report
is computed again here, independently, from the evidence the answer path stored."""

from __future__ import annotations

import json
import re
from pathlib import Path
from uuid import UUID

import numpy as np
import pytest
from django.core.management import call_command

from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.models import QueryExecution, QuotedSource, RagTrace, RetrievalHit
from documents.models import Location
from evaluation.models import EvaluationItem, EvaluationOutcome, EvaluationRun
from tests.evaluation.conftest import Shelf, gold_sample

pytestmark = pytest.mark.django_db


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _in_place(expected: dict, document: str, chunk_id: UUID) -> bool:
    """The chunk is in the expected document and touches the expected section."""
    stem = document.rsplit(".", 1)[0]
    if expected["document"] not in (document, stem):
        return False
    paths = {
        " > ".join(h)
        for h in Location.objects.filter(chunk_id=chunk_id).values_list("hierarchy", flat=True)
    }
    return any(p == expected["section"] or p.startswith(expected["section"] + " > ") for p in paths)


def _expected_figures(report: dict) -> dict:
    """The headline figures from the stored evidence of each item's query execution."""
    cited = matched = covered = in_answer = with_answer = 0
    deltas, latencies, reciprocal, abstained = [], [], [], 0
    for item in report["items"]:
        execution = QueryExecution.objects.get(pk=item["query_id"])
        expected = item["expected"]
        sources = list(QuotedSource.objects.filter(query=execution))
        assert execution.latency_ms is not None  # a completed answer's
        latencies.append(execution.latency_ms)
        deltas.append(RagTrace.objects.get(query=execution, seg=0).deltaS)
        abstained += not sources
        cited += len(sources)
        matched += sum(_in_place(expected, s.document_name, s.chunk_id) for s in sources)
        answers = [_norm(a) for a in expected.get("answer", [])]
        if answers:
            with_answer += 1
            covered += any(a in _norm(s.chunk_text) for s in sources for a in answers)
            in_answer += any(a in _norm(execution.answer) for a in answers)
        hits = RetrievalHit.objects.filter(query=execution).select_related("file").order_by("k_pos")
        rank = next(
            (n for n, h in enumerate(hits, 1) if _in_place(expected, h.file.name, h.chunk_id)), None
        )
        reciprocal.append(1 / rank if rank else 0.0)
    return {
        "citation_match_rate": round(matched / cited, 4),
        "coverage": round(covered / with_answer, 4),
        "answer_coverage": round(in_answer / with_answer, 4),
        "delta_s_over_045": round(sum(d > 0.45 for d in deltas) / len(deltas), 4),
        "false_abstention_rate": round(abstained / len(report["items"]), 4),
        "latency_p50_ms": round(float(np.percentile(latencies, 50)), 2),
        "latency_p95_ms": round(float(np.percentile(latencies, 95)), 2),
        "mrr": round(sum(reciprocal) / len(reciprocal), 4),
    }


def test_each_figure_matches_one_computed_from_the_stored_evidence(
    shelf: Shelf, tmp_path: Path
) -> None:
    gold = gold_sample(shelf, tmp_path, every=9, count=24)
    out = tmp_path / "report"
    call_command(
        "evaluate", app="SQuAD", organization="Acme", gold=str(gold), seeds=1, out=str(out)
    )

    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "completed" and report["questions"] == 24
    assert [i["question"] for i in report["items"]] == [
        json.loads(line)["question"] for line in gold.read_text().splitlines()
    ]
    for name, value in _expected_figures(report).items():
        assert report[name] == pytest.approx(value, abs=1e-4), name
    assert report["abstention_rate"] is None  # a v1.1 set has no unanswerable question
    assert sum(report["validator"].values()) == 24
    assert report["targets"]["coverage"]["target"] == 0.70
    assert report["targets"]["citation_match_rate"]["target"] == 0.95
    # the extractive generator quotes retrieved sentences: most expected answers are quoted
    assert report["coverage"] >= 0.5 and report["mrr"] >= 0.5


def test_the_report_has_its_items_the_worst_and_three_plots(shelf: Shelf, tmp_path: Path) -> None:
    gold = gold_sample(shelf, tmp_path, every=23, count=6)
    out = tmp_path / "report"
    call_command(
        "evaluate", app="SQuAD", gold=str(gold), seeds=1, out=str(out), base_url="http://x"
    )
    report = json.loads((out / "report.json").read_text())
    item = report["items"][0]
    assert set(item) >= {"question", "query_id", "answer", "cited", "expected", "verdict"}
    assert item["cited"] and set(item["cited"][0]) >= {"quoted_as", "snippet_id", "document"}
    markdown = (out / "report.md").read_text()
    linked = re.findall(
        r"\(http://x/admin/citations/queryexecution/([0-9a-f-]{36})/change/\)", markdown
    )
    assert sorted(linked) == sorted(i["query_id"] for i in report["items"])
    assert "| `citation_match_rate` | >= 0.95 |" in markdown
    for name in ("delta_s", "latency", "first_correct_rank"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_is_recorded_whole_and_chained(shelf: Shelf, tmp_path: Path) -> None:
    gold = gold_sample(shelf, tmp_path, every=31, count=3)
    call_command("evaluate", app="SQuAD", gold=str(gold), seeds=1, out=str(tmp_path / "r"))
    run = EvaluationRun.objects.latest("created_at")
    items = list(EvaluationItem.objects.filter(run=run))
    outcome = EvaluationOutcome.objects.get(run=run)
    assert run.total == len(items) == 3 and outcome.status == "completed"
    assert run.app_settings["top_k"] == shelf.squad.top_k
    chained = set(EvidenceEntry.objects.values_list("record_table", "record_id"))
    for record in [run, *items, outcome]:
        assert (record._meta.db_table, str(record.pk)) in chained
    verdict = ledger_verify()
    assert verdict.ok, verdict.problem
