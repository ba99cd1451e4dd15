"""The signed chain head exported on a schedule: the verifier checks the chain still
holds the latest one, so a chain cut, truncated or rewritten by a superuser with
the triggers off is caught even where what is left chains and verifies."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from pytest_django import Settings

from audit.heads import audit_head_export, head_latest, head_problem
from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.models import QueryExecution
from citations.services import query_execute
from tests.audit.conftest import Trail
from tests.audit.test_truncate import EVIDENCE_TABLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def heads(settings: Settings, tmp_path: Path) -> Path:
    """Heads go to a directory of this test's own (the session worker exports the
    committed chain to the configured one meanwhile)."""
    settings.PROVENANCE_AUDIT_HEAD_STORAGE = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(tmp_path / "heads")},
    }
    return tmp_path / "heads"


@pytest.fixture
def answer(trail: Trail, heads: Path) -> QueryExecution:
    return query_execute(app=trail.acme_app, question="How long are invoices kept?")


def _verify(*args: str) -> str:
    out = StringIO()
    call_command("verify_audit_trail", *args, stdout=out)
    return out.getvalue()


def _without_triggers(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(sql)
        cursor.execute("SET LOCAL session_replication_role = origin")


def test_a_head_is_exported_signed_only_when_the_chain_grew(
    answer: QueryExecution, heads: Path, settings: Settings
) -> None:
    settings.PROVENANCE_AUDIT_HEAD_KEEP = 2
    first = audit_head_export()
    assert first and (heads / first).exists()
    head = json.loads((heads / first).read_text())
    last = EvidenceEntry.objects.order_by("-seq").first()
    assert last is not None
    assert (head["seq"], head["entry_hash"]) == (last.seq, last.entry_hash)
    assert head["entries"] == EvidenceEntry.objects.count()
    assert head["signature"] and head["key_id"] and head_problem(head) == ""
    assert audit_head_export() is None  # nothing new: nothing written
    for question in ("How many days of paid leave?", "Are trains preferred over flights?"):
        query_execute(app=answer.app, question=question)
        assert audit_head_export()
    names = sorted(p.name for p in heads.iterdir())
    assert len(names) == 2 and first not in names  # the oldest pruned
    latest = head_latest()
    assert latest is not None and latest[0] == names[-1]
    assert "holds the exported head" in _verify()


def test_a_forged_head_is_refused(answer: QueryExecution, heads: Path) -> None:
    name = audit_head_export()
    assert name is not None
    head = json.loads((heads / name).read_text())
    head["entries"] += 1
    (heads / name).write_text(json.dumps(head))
    with pytest.raises(CommandError, match="signature does not match"):
        _verify()
    head["key_id"] = "0123456789abcdef"
    (heads / name).write_text(json.dumps(head))
    with pytest.raises(CommandError, match="unknown key"):
        _verify()


def test_truncation_by_a_superuser_with_triggers_off_is_caught_by_the_head(
    answer: QueryExecution, heads: Path
) -> None:
    audit_head_export()
    tables = ", ".join(f'"{t}"' for t in EVIDENCE_TABLES)
    _without_triggers(f"TRUNCATE {tables} CASCADE")
    assert not EvidenceEntry.objects.exists()
    # what is left (nothing) chains, but the published revisions lost their seals
    verdict = ledger_verify()
    assert not verdict.ok and "published but never sealed" in verdict.problem
    with pytest.raises(CommandError, match="published but never sealed"):
        _verify("--no-head")
    # the head tells even where no source was sealed: the evidence alone is cut
    _without_triggers(f"TRUNCATE {tables}, documents_organization CASCADE")
    assert ledger_verify().ok
    with pytest.raises(CommandError, match="no longer in the chain"):
        _verify()
    assert "audit trail OK: 0 entries" in _verify("--no-head")


def test_a_chain_cut_back_is_caught_by_the_latest_head_and_by_an_older_one(
    answer: QueryExecution, heads: Path, tmp_path: Path
) -> None:
    older = tmp_path / "older.json"
    _verify("--export-head", str(older))
    query_execute(app=answer.app, question="How many days of paid leave?")
    audit_head_export()
    cut = EvidenceEntry.objects.filter(record_id=str(answer.pk)).get().seq
    tail = list(EvidenceEntry.objects.filter(seq__gte=cut))
    for entry in tail:  # records and their entries, so what is left still chains
        _without_triggers(
            f"DELETE FROM \"{entry.record_table}\" WHERE id::text = '{entry.record_id}'"
        )
    _without_triggers(f"DELETE FROM audit_evidenceentry WHERE seq >= {cut}")
    assert ledger_verify().ok
    with pytest.raises(CommandError, match="no longer in the chain"):
        _verify()
    with pytest.raises(CommandError, match="no longer in the chain"):
        _verify("--since-head", str(older))


def test_the_head_check_options(answer: QueryExecution, heads: Path, tmp_path: Path) -> None:
    assert "no exported head yet" in _verify()
    with pytest.raises(CommandError, match="exclude each other"):
        _verify("--no-head", "--since-head", str(tmp_path / "x.json"))
    with pytest.raises(CommandError, match="cannot read"):
        _verify("--since-head", str(tmp_path / "absent.json"))
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(CommandError, match="not an exported head"):
        _verify("--since-head", str(tmp_path / "list.json"))
    # a head exported by hand before heads were signed still works with --since-head
    last = EvidenceEntry.objects.order_by("-seq").first()
    assert last is not None
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps({"seq": last.seq, "entry_hash": last.entry_hash}))
    assert "holds the exported head" in _verify("--since-head", str(legacy))
    legacy.write_text(json.dumps({"seq": last.seq, "entry_hash": "0" * 64}))
    with pytest.raises(CommandError, match="no longer in the chain"):
        _verify("--since-head", str(legacy))
