"""The hash chain: tampering by a superuser who bypasses the database's
protections (triggers off) is caught and named by verify_audit_trail."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from audit.ledger import ledger_record_status, ledger_verify
from audit.models import EvidenceEntry
from citations.models import ClaimCitation, QueryExecution, QuotedSource, RetrievalHit
from citations.services import query_execute
from tests.audit.conftest import Trail

pytestmark = pytest.mark.django_db


@pytest.fixture
def answer(trail: Trail) -> QueryExecution:
    return query_execute(app=trail.acme_app, question="How long are invoices kept?")


def _as_superuser_without_triggers(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(sql, params or [])
        cursor.execute("SET LOCAL session_replication_role = origin")


def _verify_command() -> str:
    out = StringIO()
    call_command("verify_audit_trail", stdout=out)
    return out.getvalue()


def test_an_untouched_trail_verifies(answer: QueryExecution) -> None:
    assert "audit trail OK" in _verify_command()
    entries = EvidenceEntry.objects.filter(record_id=str(answer.pk))
    assert entries.count() == 1


def test_a_records_status_names_its_entry_and_whether_it_was_edited(answer: QueryExecution) -> None:
    entry = EvidenceEntry.objects.get(record_id=str(answer.pk))
    assert ledger_record_status(answer) == f"entry #{entry.seq}, intact"
    answer.answer = "Invoices are kept for one year."  # as read back after an edit
    assert ledger_record_status(answer) == f"entry #{entry.seq}, EDITED since it was chained"
    unchained = QueryExecution(pk="00000000-0000-0000-0000-000000000001")
    assert ledger_record_status(unchained, chained_later=True) == "not chained yet"
    assert ledger_record_status(unchained) == "MISSING from the chain"


def test_an_edit_made_with_raw_sql_is_caught_and_named(answer: QueryExecution) -> None:
    source = QuotedSource.objects.filter(query=answer).first()
    assert source is not None
    _as_superuser_without_triggers(
        "UPDATE citations_quotedsource SET chunk_text = 'Invoices are kept for one year.' "
        "WHERE id = %s",
        [source.pk],
    )
    verdict = ledger_verify()
    assert not verdict.ok
    assert f"citations_quotedsource {source.pk}" in verdict.problem
    assert "edited" in verdict.problem
    with pytest.raises(CommandError, match=f"citations_quotedsource {source.pk}.*edited"):
        _verify_command()


def test_a_deleted_record_is_caught_and_named(answer: QueryExecution) -> None:
    claim = ClaimCitation.objects.filter(query=answer).first()
    assert claim is not None
    _as_superuser_without_triggers("DELETE FROM citations_claimcitation WHERE id = %s", [claim.pk])
    verdict = ledger_verify()
    assert not verdict.ok and f"citations_claimcitation {claim.pk}" in verdict.problem
    assert "removed" in verdict.problem


def test_reordered_entries_are_caught(answer: QueryExecution) -> None:
    first, second = EvidenceEntry.objects.order_by("-seq")[1:3]
    _as_superuser_without_triggers(
        "UPDATE audit_evidenceentry SET seq = -seq WHERE seq IN (%s, %s)", [first.seq, second.seq]
    )
    _as_superuser_without_triggers(
        "UPDATE audit_evidenceentry SET seq = CASE seq WHEN %s THEN %s ELSE %s END "
        "WHERE seq IN (%s, %s)",
        [-first.seq, second.seq, first.seq, -first.seq, -second.seq],
    )
    verdict = ledger_verify()
    assert not verdict.ok and "reordered or removed" in verdict.problem


def test_a_record_written_around_the_chain_is_caught(answer: QueryExecution) -> None:
    hit = RetrievalHit.objects.filter(query=answer).first()
    assert hit is not None
    payload = dict(hit.payload)
    _as_superuser_without_triggers(
        "INSERT INTO citations_retrievalhit (query_id, chunk_id, file_id, file_revision, "
        "chunk_hash, section, retriever_type, score_raw, score_norm, k_pos, payload) "
        "VALUES (%s, %s, %s, 1, 'x', '', 'SEMANTIC_SEARCH', 1, 1, 999, %s)",
        [answer.pk, hit.chunk_id, hit.file_id, json.dumps(payload)],
    )
    verdict = ledger_verify()
    assert not verdict.ok and "not in the chain" in verdict.problem


def test_an_exported_head_proves_the_trail_only_grew(
    answer: QueryExecution, tmp_path: Path
) -> None:
    head = tmp_path / "head.json"
    call_command("verify_audit_trail", "--export-head", str(head), stdout=StringIO())
    exported = json.loads(head.read_text())
    last = EvidenceEntry.objects.order_by("-seq").first()
    assert last is not None and exported["seq"] == last.seq
    query_execute(app=answer.app, question="How many days of paid leave?")
    call_command("verify_audit_trail", "--since-head", str(head), stdout=StringIO())
    # cutting off the tail (records and their entries) keeps a consistent chain,
    # but the exported head is gone from it
    tail = list(EvidenceEntry.objects.filter(seq__gte=exported["seq"]))
    for entry in tail:
        _as_superuser_without_triggers(
            f'DELETE FROM "{entry.record_table}" WHERE id::text = %s', [entry.record_id]
        )
    _as_superuser_without_triggers(
        "DELETE FROM audit_evidenceentry WHERE seq >= %s", [exported["seq"]]
    )
    with pytest.raises(CommandError, match="no longer in the chain"):
        call_command("verify_audit_trail", "--since-head", str(head), stdout=StringIO())
