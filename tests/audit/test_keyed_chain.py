"""The chain is keyed: someone who can write to the database but does not hold the
key (kept outside it) cannot edit a record and recompute the chain unseen, with
plain SHA-256 or with a key of their own. Entries made before keying, and entries
made with a retired key, still verify."""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection
from pytest_django import Settings

from audit.keys import audit_key, key_fingerprint
from audit.ledger import GENESIS, SEAL_TABLE, canonical, ledger_seal, ledger_verify
from audit.models import EvidenceEntry
from citations.models import QueryExecution, QuotedSource
from citations.services import query_execute
from tests.audit.conftest import Trail

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
KEY_A = "a" * 24 + "-first-audit-key-0001"
KEY_B = "b" * 24 + "-second-audit-key-002"


@pytest.fixture
def answer(trail: Trail) -> QueryExecution:
    return query_execute(app=trail.acme_app, question="How long are invoices kept?")


def _as_superuser_without_triggers(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(sql, params or [])
        cursor.execute("SET LOCAL session_replication_role = origin")


def _recompute_from(seq: int, sign: Callable[[bytes], tuple[str, str]]) -> None:
    """What an attacker does after editing a record: re-hash its entry and every
    later one, each with ``sign(message) -> (entry_hash, key_id)``."""
    entries = list(EvidenceEntry.objects.order_by("seq"))
    prev = GENESIS
    for entry in entries:
        if entry.seq >= seq:
            content = entry.content_hash
            if entry.record_table == "citations_quotedsource":
                row = QuotedSource.objects.get(pk=entry.record_id)
                content = hashlib.sha256(canonical(row)).hexdigest()
            message = f"{prev}|{entry.record_table}|{entry.record_id}|{content}".encode()
            link, key_id = sign(message)
            _as_superuser_without_triggers(
                "UPDATE audit_evidenceentry SET content_hash = %s, prev_hash = %s, "
                "entry_hash = %s, key_id = %s WHERE seq = %s",
                [content, prev, link, key_id, entry.seq],
            )
            prev = link
        else:
            prev = entry.entry_hash


def _edit_a_quoted_source(answer: QueryExecution) -> int:
    """Rewrite a quoted source's text; the seq of its chain entry."""
    source = QuotedSource.objects.filter(query=answer).first()
    assert source is not None
    _as_superuser_without_triggers(
        "UPDATE citations_quotedsource SET chunk_text = 'Invoices are kept for one year.' "
        "WHERE id = %s",
        [source.pk],
    )
    return EvidenceEntry.objects.get(record_table="citations_quotedsource", record_id=source.pk).seq


def _sha256(message: bytes) -> tuple[str, str]:
    return hashlib.sha256(message).hexdigest(), ""


def test_new_entries_are_hmacs_with_the_key_they_name(answer: QueryExecution) -> None:
    key = audit_key()
    entry = EvidenceEntry.objects.get(record_id=str(answer.pk))
    message = f"{entry.prev_hash}|{entry.record_table}|{entry.record_id}|{entry.content_hash}"
    assert entry.key_id == key.key_id == key_fingerprint(key.secret)
    assert entry.entry_hash == hmac.new(key.secret, message.encode(), "sha256").hexdigest()
    assert entry.entry_hash != hashlib.sha256(message.encode()).hexdigest()
    assert ledger_verify().ok


def test_an_edit_recomputed_with_plain_sha256_is_caught(answer: QueryExecution) -> None:
    seq = _edit_a_quoted_source(answer)
    _recompute_from(seq, _sha256)
    verdict = ledger_verify()
    assert not verdict.ok
    assert f"entry #{seq}" in verdict.problem and "without the key" in verdict.problem


def test_an_edit_recomputed_with_sha256_under_the_real_key_id_is_caught(
    answer: QueryExecution,
) -> None:
    seq = _edit_a_quoted_source(answer)
    _recompute_from(seq, lambda m: (hashlib.sha256(m).hexdigest(), audit_key().key_id))
    verdict = ledger_verify()
    assert not verdict.ok
    assert f"entry #{seq}" in verdict.problem and "altered" in verdict.problem


def test_an_edit_recomputed_with_a_wrong_key_is_caught(answer: QueryExecution) -> None:
    seq = _edit_a_quoted_source(answer)
    wrong = b"an attacker's own key, 32+ chars long"
    _recompute_from(
        seq, lambda m: (hmac.new(wrong, m, "sha256").hexdigest(), key_fingerprint(wrong))
    )
    verdict = ledger_verify()
    assert not verdict.ok
    assert f"unknown key {key_fingerprint(wrong)}" in verdict.problem
    # claiming the real key's fingerprint does not help
    _recompute_from(seq, lambda m: (hmac.new(wrong, m, "sha256").hexdigest(), audit_key().key_id))
    assert "altered" in ledger_verify().problem


def test_a_whole_chain_rewritten_without_the_key_is_caught(answer: QueryExecution) -> None:
    _edit_a_quoted_source(answer)
    _recompute_from(0, _sha256)
    verdict = ledger_verify()
    assert not verdict.ok and "none of the" in verdict.problem and "keyed" in verdict.problem


def test_an_unkeyed_chain_from_before_keying_verifies_once_sealed(answer: QueryExecution) -> None:
    """Upgrading: every entry made before keys existed is plain SHA-256 (rewritten so
    here); the seal chains them under the key, later entries are keyed."""
    _recompute_from(0, _sha256)
    legacy = EvidenceEntry.objects.count()
    assert not ledger_verify().ok  # unsealed: indistinguishable from a rewrite
    seal = ledger_seal()
    assert seal is not None
    assert seal.record_table == SEAL_TABLE and seal.key_id == audit_key().key_id
    assert ledger_seal() is None  # sealed once
    query_execute(app=answer.app, question="How many days of paid leave?")
    verdict = ledger_verify()
    assert verdict.ok, verdict.problem
    assert verdict.unkeyed == legacy
    # an unkeyed entry after the seal is a rewrite
    last = EvidenceEntry.objects.order_by("-seq").first()
    assert last is not None
    _recompute_from(last.seq, _sha256)
    assert "without the key" in ledger_verify().problem


def test_entries_of_a_retired_key_verify_and_an_unknown_key_is_named(
    answer: QueryExecution, settings: Settings
) -> None:
    first = audit_key().secret.decode()  # the key the package's evidence was made with
    settings.PROVENANCE_AUDIT_KEY, settings.PROVENANCE_AUDIT_RETIRED_KEYS = KEY_A, first
    query_execute(app=answer.app, question="How many days of paid leave?")
    settings.PROVENANCE_AUDIT_KEY = KEY_B  # rotated: both earlier keys retired
    settings.PROVENANCE_AUDIT_RETIRED_KEYS = f"{first}\n{KEY_A}"
    query_execute(app=answer.app, question="Are trains preferred over flights?")
    assert {key_fingerprint(KEY_A.encode()), key_fingerprint(KEY_B.encode())} <= set(
        EvidenceEntry.objects.values_list("key_id", flat=True)
    )
    assert ledger_verify().ok
    settings.PROVENANCE_AUDIT_RETIRED_KEYS = first
    verdict = ledger_verify()
    assert not verdict.ok
    assert f"unknown key {key_fingerprint(KEY_A.encode())}" in verdict.problem


def test_a_key_is_made_once_on_first_use_outside_the_database(
    settings: Settings, tmp_path: Path
) -> None:
    """Local and test settings: no key configured, one random key file appears (0600),
    and processes starting together agree on it."""
    from audit import keys

    settings.PROVENANCE_AUDIT_KEY = ""
    settings.PROVENANCE_AUDIT_KEY_GENERATE_FILE = tmp_path / "keys" / "audit.key"
    found: list[str] = []
    threads = [
        threading.Thread(target=lambda: found.append(keys._generated(tmp_path / "race.key")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == 1
    key = audit_key()
    path = tmp_path / "keys" / "audit.key"
    assert path.read_text().strip().encode() == key.secret
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert len(key.secret) >= 32
    assert audit_key() == key


def _production(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROVENANCE_AUDIT_KEY")}
    base.update(
        DJANGO_SETTINGS_MODULE="provenance_site.settings.production",
        DJANGO_SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://nobody@127.0.0.1:1/none",  # never connected to
        **env,
    )
    code = (
        "import django; django.setup(); from audit.keys import audit_key; print(audit_key().key_id)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=base, capture_output=True, text=True
    )


def test_production_refuses_to_start_without_a_key_and_reads_key_files(tmp_path: Path) -> None:
    refused = _production({})
    assert refused.returncode != 0 and "PROVENANCE_AUDIT_KEY" in refused.stderr
    short = _production({"PROVENANCE_AUDIT_KEY": "too short"})
    assert short.returncode != 0 and "32 characters" in short.stderr
    missing = _production({"PROVENANCE_AUDIT_KEY_FILE": str(tmp_path / "absent")})
    assert missing.returncode != 0 and "cannot be read" in missing.stderr
    key_file = tmp_path / "audit.key"
    key_file.write_text(KEY_B + "\n")
    started = _production(
        {"PROVENANCE_AUDIT_KEY": KEY_A, "PROVENANCE_AUDIT_KEY_FILE": str(key_file)}
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == key_fingerprint(KEY_B.encode())  # the file wins
