"""Runs on the real worker: an officer starts one from the admin (queued on commit,
progress on its page), and the demo's evaluation starts once its documents are
ingested, exactly once."""

from __future__ import annotations

import io
import time
from pathlib import Path
from uuid import UUID

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from pytest_django import Settings

from audit.ledger import ledger_verify
from citations.models import QueryExecution
from documents.models import File, OrganizationMember
from evaluation.demo import demo_evaluation_ensure
from evaluation.models import EvaluationOutcome, EvaluationRun
from evaluation.tasks import evaluation_demo_task
from tests.support.worker import WorkerProcess
from tests.threads.conftest import tenant_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

HANDBOOK = (
    b"# Handbook\n\n## Retention\n\nInvoices are kept for seven years after the fiscal year.\n\n"
    b"## Leave\n\nEmployees receive twenty-five days of paid leave per year.\n"
)
GOLD = (
    b'{"question": "How long are invoices kept?", "paraphrases": ["What is the retention '
    b'period of invoices?"], "expected": {"document": "handbook.md", "section": "Handbook > '
    b'Retention", "answer": "seven years"}}\n'
    b'{"question": "How many days of paid leave do employees get?", "expected": {"answer": '
    b'"twenty-five days"}}\n'
)


def _outcome(run_id: UUID, timeout: float = 240) -> EvaluationOutcome:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outcome = EvaluationOutcome.objects.filter(run_id=run_id).first()
        if outcome is not None:
            return outcome
        time.sleep(0.5)
    raise AssertionError(f"evaluation run {run_id} did not finish in {timeout}s")


def test_an_officer_starts_a_run_that_the_worker_completes(celery_worker: WorkerProcess) -> None:
    tenant = tenant_with("Acme", {"handbook.md": HANDBOOK})
    officer = get_user_model().objects.create_user("olivia", is_staff=True)
    OrganizationMember.objects.create(
        organization=tenant.organization, user=officer, role="officer"
    )
    client = Client()
    client.force_login(officer)
    gold = io.BytesIO(GOLD)
    gold.name = "handbook-gold.jsonl"

    response = client.post(
        "/admin/evaluation/evaluationrun/start/",
        {"app": tenant.app.pk, "gold": gold, "seeds": 2},
    )
    run = EvaluationRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/admin/evaluation/evaluationrun/{run.pk}/change/"
    assert run.total == 6 and run.started_by_label == "user:olivia" and run.origin == "admin"
    page = client.get(response["Location"]).content.decode()
    assert "<progress" in page and "/6</span>" in page
    outcome = _outcome(run.pk)
    assert outcome.status == "completed" and run.items.count() == 6
    assert outcome.figures["seed_agreement"] == 1.0
    assert outcome.figures["coverage"] == 1.0
    callers = QueryExecution.objects.filter(origin="evaluation").values_list("caller", flat=True)
    assert set(callers) == {"user:olivia"}
    page = client.get(response["Location"]).content.decode()
    assert "6/6</span>" in page and "completed" in page and 'http-equiv="refresh"' not in page
    verdict = ledger_verify()
    assert verdict.ok, verdict.problem


def test_the_demo_evaluation_runs_once_its_documents_are_ingested(
    celery_worker: WorkerProcess, settings: Settings, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path  # the demo's login and key files stay out of var/
    call_command("setup_demo", verbosity=0)
    evaluation_demo_task.delay()
    deadline = time.monotonic() + 300
    while not EvaluationRun.objects.exists():
        assert time.monotonic() < deadline, list(File.objects.values_list("name", "status"))
        time.sleep(1)
    run = EvaluationRun.objects.get()
    assert File.objects.exclude(status="ready").count() == 0
    outcome = _outcome(run.pk)
    assert outcome.status == "completed" and run.origin == "demo"
    assert outcome.figures["questions"] == run.total == 19
    assert outcome.figures["abstention_rate"] is not None
    assert demo_evaluation_ensure() == "exists"
    assert EvaluationRun.objects.count() == 1
    print("\ndemo figures:", {k: v for k, v in outcome.figures.items() if k != "targets"})
