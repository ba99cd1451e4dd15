"""TRUNCATE fires no row trigger: a statement trigger on every evidence table
refuses it, for the application's role and for Django's flush alike."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from pytest_django import Settings

from audit.ledger import CHAINED_MODELS
from audit.models import EvidenceEntry
from citations.models import ClaimCheck, ModelCall, QueryExecution
from citations.services import query_execute
from tests.audit.conftest import Trail

pytestmark = pytest.mark.django_db

EVIDENCE_TABLES = [apps.get_model(label)._meta.db_table for label in CHAINED_MODELS] + [
    EvidenceEntry._meta.db_table
]
# the tables an answer (with model evidence beside it) and an upload fill; the others
# carry the same guard, checked in the catalog below
FILLED = [
    "citations_queryexecution",
    "citations_retrievalhit",
    "citations_quotedsource",
    "citations_claimcitation",
    "rag_traces",
    "citations_modelcall",
    "citations_claimcheck",
    "audit_documentevent",
    "audit_evidenceentry",
]


@pytest.fixture
def answer(trail: Trail) -> QueryExecution:
    """An answer, and model evidence beside it (the extractive generator writes none)."""
    execution = query_execute(app=trail.acme_app, question="How long are invoices kept?")
    call = ModelCall.objects.create(
        query=execution,
        attempt=1,
        provider="openai",
        model="a-model",
        prompt={"messages": []},
        prompt_sha256="0" * 64,
        raw_response="{}",
        response_sha256="0" * 64,
        latency_ms=1.0,
    )
    ClaimCheck.objects.create(
        query=execution,
        model_call=call,
        sentence=0,
        reply_sentence="Invoices are kept.",
        supported=False,
        reason="no_citation",
    )
    return execution


def _count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{table}"')  # our own table names
        return cursor.fetchone()[0]


@pytest.mark.parametrize("table", FILLED)
def test_truncate_of_an_evidence_table_is_refused(answer: QueryExecution, table: str) -> None:
    before = _count(table)
    assert before > 0, f"{table} holds no evidence to protect in this test"
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred FK checks pending
    with (
        pytest.raises(DatabaseError, match=f"append-only: TRUNCATE on {table} refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f'TRUNCATE "{table}" CASCADE')
    assert _count(table) == before


def test_djangos_flush_cannot_erase_evidence_outside_the_test_settings(
    answer: QueryExecution, settings: Settings
) -> None:
    settings.PROVENANCE_TEST_FLUSH_EVIDENCE = False
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred FK checks pending
    with pytest.raises(CommandError, match="couldn't be flushed") as refused:
        call_command("flush", interactive=False, verbosity=0)
    assert "append-only: TRUNCATE" in str(refused.value.__cause__)
    assert EvidenceEntry.objects.exists()


def test_every_evidence_table_has_its_truncate_trigger() -> None:
    """A table added to the chain without the guard is caught here, before it ships."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = 'provenance_refuse_truncate' "
            "AND t.tgenabled = 'O' AND t.tgtype & 32 = 32"  # TRUNCATE, fired in origin mode
        )
        guarded = {name for (name,) in cursor.fetchall()}
    assert set(FILLED) <= set(EVIDENCE_TABLES)
    assert set(EVIDENCE_TABLES) - guarded == set()
