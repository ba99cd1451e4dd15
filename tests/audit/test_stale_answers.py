"""An answer left ``running`` by a process that died is reported by the verifier,
then failed by the sweeper with a reason, and chained; that transition is the only
new one the database allows."""

from __future__ import annotations

import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, transaction
from pytest_django import Settings

from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.models import QueryExecution, QueryStatus
from citations.services import query_execute
from citations.services.abandoning import query_executions_sweep_stale
from tests.audit.conftest import Trail

pytestmark = pytest.mark.django_db

STALE_SECONDS = 1


@pytest.fixture
def stuck(trail: Trail, settings: Settings) -> list[QueryExecution]:
    """Two answers whose process died after writing the ``running`` row (as a killed
    connection leaves them), one second old when stale means one second."""
    settings.PROVENANCE_QUERY_STALE_SECONDS = STALE_SECONDS
    rows = [
        QueryExecution.objects.create(
            app=trail.acme_app,
            organization=trail.acme,
            question=f"Asked before the crash {n}?",
            caller="api-key:crashed",
        )
        for n in range(2)
    ]
    time.sleep(STALE_SECONDS + 0.2)
    return rows


def _verify() -> str:
    out = StringIO()
    call_command("verify_audit_trail", "--no-head", stdout=out)
    return out.getvalue()


def test_the_verifier_names_answers_stuck_running(stuck: list[QueryExecution]) -> None:
    verdict = ledger_verify()
    assert not verdict.ok
    assert str(stuck[0].pk) in verdict.problem and "2 answer(s) still running" in verdict.problem
    with pytest.raises(CommandError, match=str(stuck[0].pk)):
        _verify()


def test_the_sweeper_fails_and_chains_them_once(stuck: list[QueryExecution]) -> None:
    fresh = QueryExecution.objects.create(
        app=stuck[0].app, organization_id=stuck[0].organization_id, question="Just asked?"
    )
    swept = query_executions_sweep_stale()
    assert sorted(swept) == sorted(str(r.pk) for r in stuck)  # not the fresh one
    for row in stuck:
        row.refresh_from_db()
        assert row.status == QueryStatus.FAILED and row.completed_at is not None
        assert row.error_message.startswith("abandoned: still running 1 s after it was asked")
        assert EvidenceEntry.objects.filter(record_id=str(row.pk)).count() == 1
    assert query_executions_sweep_stale() == []  # a second sweep finds nothing
    fresh.refresh_from_db()
    assert fresh.status == QueryStatus.RUNNING
    assert "audit trail OK" in _verify()


def test_a_swept_answer_is_frozen_and_running_rows_only_move_to_a_final_state(
    stuck: list[QueryExecution],
) -> None:
    query_executions_sweep_stale()
    for change in (
        {"status": QueryStatus.COMPLETED, "answer": "late answer"},
        {"status": QueryStatus.RUNNING},
        {"error_message": "rewritten"},
    ):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            QueryExecution.objects.filter(pk=stuck[0].pk).update(**change)
    running = QueryExecution.objects.create(
        app=stuck[0].app, organization_id=stuck[0].organization_id, question="Still going?"
    )
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        QueryExecution.objects.filter(pk=running.pk).update(answer="half an answer")


def test_an_answer_in_time_is_untouched_by_the_sweep(trail: Trail, settings: Settings) -> None:
    settings.PROVENANCE_QUERY_STALE_SECONDS = 600
    execution = query_execute(app=trail.acme_app, question="How long are invoices kept?")
    assert query_executions_sweep_stale() == []
    execution.refresh_from_db()
    assert execution.status == QueryStatus.COMPLETED and "seven years" in execution.answer
