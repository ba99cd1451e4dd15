"""An evaluation of an app whose model is a real small model behind a real
OpenAI-compatible server (llama-cpp-python's, started here): every question is
answered, by the model or by its extractive fallback, every ``[n]`` stands on the
chunk's exact text, and the report says who wrote each answer and how often each
writer's answers held the gold answer."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from citations.llm_apps import app_create
from citations.markers import markers_in
from citations.models import ClaimCheck, ClaimCitation, QueryExecution, QuotedSource
from tests.evaluation.conftest import Shelf, gold_sample
from tests.support.llama_server import LlamaServer, llama_server, served

pytestmark = [pytest.mark.django_db, pytest.mark.long]
# questions spread over both articles; a 135M model on a shared 2-core host takes
# ~5-30 s a question
QUESTIONS = int(os.environ.get("PROVENANCE_TEST_QUESTIONS", "6"))


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


def test_a_local_model_s_evaluation_answers_every_question_and_says_who_wrote_it(
    shelf: Shelf, real_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served(real_server.url, real_server.model, monkeypatch)
    app_create(
        organization=shelf.acme,
        name="SQuAD local model",
        data_source_names=["SQuAD"],
        generator="openai",
        model=real_server.model,
        max_output_tokens=256,
    )
    gold = gold_sample(shelf, tmp_path, every=17, count=QUESTIONS)
    out = tmp_path / "report"

    call_command("evaluate", app="SQuAD local model", gold=str(gold), out=str(out))

    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "completed" and report["questions"] == QUESTIONS
    assert report["failed"] == 0 and sum(report["written_by"].values()) == QUESTIONS
    assert set(report["written_by"]) <= {"openai", "extractive"}
    assert sum(report["fallback_reasons"].values()) == report["written_by"].get("extractive", 0)
    assert "model_answer_coverage" in report and "fallback_answer_coverage" in report
    markdown = (out / "report.md").read_text()
    assert "| `written_by` |" in markdown and "| `model_answer_coverage` |" in markdown
    for item in report["items"]:
        execution = QueryExecution.objects.get(pk=item["query_id"])
        assert execution.status == "completed"
        quoted = sorted(q.quoted_as for q in QuotedSource.objects.filter(query=execution))
        assert sorted(set(markers_in(execution.answer))) == quoted
        for claim in ClaimCitation.objects.filter(query=execution).select_related(
            "quoted_source__chunk"
        ):
            text = claim.quoted_source.chunk.chunk_text
            assert text[claim.source_start : claim.source_end] == claim.source_sentence
            if execution.generator == "openai":
                assert ClaimCheck.objects.get(query=execution, claim=claim).supported
    print(
        "local model evaluation:",
        {k: report[k] for k in ("written_by", "fallback_reasons", "answer_coverage")},
        {k: report[k] for k in ("model_answer_coverage", "fallback_answer_coverage")},
        {k: report[k] for k in ("latency_p50_ms", "latency_p95_ms")},
    )
