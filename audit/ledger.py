"""The hash chain over evidence records.

Appends take a transaction-scoped advisory lock, so concurrent writers queue
up and the chain stays linear. Each entry hashes the record's canonical
content as read back from the database, so verification compares like with
like years later.

Entries are keyed (HMAC-SHA256 with a secret kept outside the database, see
audit/keys.py), so someone who can only write to the database cannot recompute
the chain after editing a record. Entries made before the key existed keep their
plain SHA-256; a keyed "seal" entry chains them under the key, and no unkeyed
entry may follow a keyed one.
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.apps import apps
from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from audit.keys import UNKEYED, AuditKey, audit_key, audit_keyring, digest
from audit.models import EvidenceEntry

GENESIS = "0" * 64
CHAIN_LOCK_KEY = 0x50524F56  # "PROV": one lock id for every writer of the chain

# tables whose rows are evidence, in the order a verifier reports them
CHAINED_MODELS = (
    "citations.QueryExecution",
    "citations.RetrievalHit",
    "citations.QuotedSource",
    "citations.ClaimCitation",
    "citations.RagTrace",
    "citations.ModelCall",
    "citations.ClaimCheck",
    "citations.ReasoningStep",
    "citations.StepSourceAttribution",
    "citations.StepClaim",
    "citations.AnswerFeedback",
    "audit.DocumentEvent",
    "audit.OriginalsCheck",
    "documents.RevisionSeal",
    "evaluation.EvaluationRun",
    "evaluation.EvaluationItem",
    "evaluation.EvaluationOutcome",
    "citations.ConversationDeletion",
)


# checks of what the chained records vouch for, beyond the records themselves (a
# published revision's chunks re-hashed against its seal): each returns the first
# problem or "", and apps above the ledger register theirs in AppConfig.ready()
CONTENT_CHECKS: list[Callable[[], str]] = []


def ledger_content_check_register(check: Callable[[], str]) -> None:
    if check not in CONTENT_CHECKS:
        CONTENT_CHECKS.append(check)


def _value(value: object) -> object:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    return value


# columns added to an evidence table after rows were chained: hashed only when they
# hold something, so the rows chained before they existed still verify, and a value
# written later (or one blanked out) changes the hash like any other column's
ADDED_COLUMNS: dict[str, dict[str, object]] = {
    "citations_queryexecution": {
        "confidence": "",
        "confidence_note": "",
        "caller_address": None,
        "caller_user_agent": "",
        "generator": "",
        "fallback_reason": "",
    },
    "citations_modelcall": {"wire": {}, "error": ""},
    "citations_claimcheck": {"alignment": "", "edit_distance": None},
    "audit_documentevent": {"user_agent": ""},
}


def canonical(record: models.Model) -> bytes:
    """Every concrete column of the row, as sorted compact JSON (an added column
    left at its default out)."""
    added = ADDED_COLUMNS.get(record._meta.db_table, {})
    fields = {
        f.attname: _value(getattr(record, f.attname))
        for f in record._meta.concrete_fields
        if f.attname not in added or getattr(record, f.attname) != added[f.attname]
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()


# the record of a seal entry: the unkeyed entries before it, chained under the key
SEAL_TABLE = "audit_key_seal"


def entry_hash(
    prev: str, table: str, record_id: str, content_hash: str, key: AuditKey | None
) -> str:
    """The link's hash: keyed with ``key``, or plain SHA-256 for a legacy entry."""
    return digest(f"{prev}|{table}|{record_id}|{content_hash}".encode(), key)


def seal_content_hash(prev: str) -> str:
    return hashlib.sha256(f"seal|{prev}".encode()).hexdigest()


def _lock_chain() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK_KEY])


@transaction.atomic
def ledger_append(records: Sequence[models.Model]) -> list[EvidenceEntry]:
    """Chain ``records`` (re-read from the database) after the current head."""
    if not records:
        return []
    key = audit_key()
    _lock_chain()
    head = EvidenceEntry.objects.order_by("-seq").values_list("entry_hash", flat=True).first()
    prev = head or GENESIS
    entries = []
    fresh = _reread(records)
    organizations = _organizations(fresh)
    for record in fresh:
        table = record._meta.db_table
        content_hash = hashlib.sha256(canonical(record)).hexdigest()
        link = entry_hash(prev, table, str(record.pk), content_hash, key)
        entries.append(
            EvidenceEntry(
                record_table=table,
                record_id=str(record.pk),
                content_hash=content_hash,
                prev_hash=prev,
                entry_hash=link,
                key_id=key.key_id,
                organization_id=organizations[(table, record.pk)],
            )
        )
        prev = link
    return EvidenceEntry.objects.bulk_create(entries)


def seal_entry(entry_model: type[EvidenceEntry], key: AuditKey) -> EvidenceEntry | None:
    """Chain the unkeyed entries made before the chain was keyed under ``key`` (the
    caller holds the chain lock in a transaction). Takes the model class so the
    migration that seals an existing chain can pass its historical model."""
    head = entry_model.objects.order_by("-seq").first()
    if head is None or head.key_id != UNKEYED:
        return None
    content = seal_content_hash(head.entry_hash)
    return entry_model.objects.create(
        record_table=SEAL_TABLE,
        record_id=key.key_id,
        content_hash=content,
        prev_hash=head.entry_hash,
        entry_hash=entry_hash(head.entry_hash, SEAL_TABLE, key.key_id, content, key),
        key_id=key.key_id,
    )


@transaction.atomic
def ledger_seal() -> EvidenceEntry | None:
    """Seal a chain whose last entry is unkeyed (a chain made before keys existed)."""
    key = audit_key()
    _lock_chain()
    return seal_entry(EvidenceEntry, key)


def _organizations(records: Sequence[models.Model]) -> dict[tuple[str, object], uuid.UUID | None]:
    """Each record's organization, so an officer's scoped list shows the whole chain
    of their answers: the record's own, or, for the rows of an answer (hits, quoted
    sources, claims, traces), that of its query execution."""
    executions = apps.get_model("citations.QueryExecution")
    query_ids = {
        query_id
        for r in records
        if not hasattr(r, "organization_id") and (query_id := _query_id(r)) is not None
    }
    of_query: dict[uuid.UUID | None, uuid.UUID] = dict(
        executions._default_manager.filter(pk__in=query_ids)
        .order_by()
        .values_list("pk", "organization_id")
    )
    return {
        (r._meta.db_table, r.pk): (
            r.organization_id if hasattr(r, "organization_id") else of_query.get(_query_id(r))
        )
        for r in records
    }


def _query_id(record: models.Model) -> uuid.UUID | None:
    """The query execution a row of an answer belongs to (None for other records)."""
    return getattr(record, "query_id", None)


def _reread(records: Sequence[models.Model]) -> list[models.Model]:
    """The rows as stored (database rounding and JSON normalisation included)."""
    by_model: dict[type[models.Model], list] = {}
    for record in records:
        by_model.setdefault(type(record), []).append(record.pk)
    fresh = {}
    for model, pks in by_model.items():
        # unordered: a model's default ordering by its query would join and sort
        for row in model._default_manager.filter(pk__in=pks).order_by():
            fresh[(model, row.pk)] = row
    return [fresh[(type(r), r.pk)] for r in records]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: int
    problem: str = ""
    unkeyed: int = 0  # entries made before the chain was keyed (plain SHA-256)


def _models_by_table() -> dict[str, type[models.Model]]:
    chained = [apps.get_model(label) for label in CHAINED_MODELS]
    return {model._meta.db_table: model for model in chained}


def _batches(size: int = 2000) -> Iterator[list[EvidenceEntry]]:
    last = 0
    while batch := list(EvidenceEntry.objects.filter(seq__gt=last).order_by("seq")[:size]):
        yield batch
        last = batch[-1].seq


@dataclass
class _Walk:
    """Where the verifier is along the chain."""

    prev: str = GENESIS
    checked: int = 0
    unkeyed: int = 0
    keyed: bool = False  # a keyed entry was seen: every later one must be keyed too


def ledger_verify(*, stale_seconds: int | None = None) -> Verdict:
    """Recompute the chain; the first edited, removed, reordered, unchained or
    unkeyed-after-keying record fails it, and so does an answer stuck ``running`` or
    a registered content check's problem (a sealed chunk whose text changed)."""
    tables, walk, seen, keyring = _models_by_table(), _Walk(), set(), audit_keyring()
    for batch in _batches():
        rows = _load_rows(tables, batch)
        for entry in batch:
            row = rows.get((entry.record_table, entry.record_id))
            problem = _check_entry(entry, walk, row, keyring)
            if problem:
                return Verdict(False, walk.checked, problem, walk.unkeyed)
            seen.add((entry.record_table, entry.record_id))
            walk.prev, walk.checked = entry.entry_hash, walk.checked + 1
    problem = (
        _unsealed(walk)
        or _unchained(tables, seen)
        or _stale_running(
            settings.PROVENANCE_QUERY_STALE_SECONDS if stale_seconds is None else stale_seconds
        )
        or next((p for check in CONTENT_CHECKS if (p := check())), "")
    )
    return Verdict(not problem, walk.checked, problem, walk.unkeyed)


def _load_rows(tables: dict, batch: list[EvidenceEntry]) -> dict:
    wanted: dict[str, list[str]] = {}
    for entry in batch:
        wanted.setdefault(entry.record_table, []).append(entry.record_id)
    rows = {}
    for table, ids in wanted.items():
        model = tables.get(table)
        if model is None:
            continue
        for row in model.objects.filter(pk__in=ids):
            rows[(table, str(row.pk))] = row
    return rows


def _entry_key(entry: EvidenceEntry, walk: _Walk, keyring: dict) -> tuple[AuditKey | None, str]:
    """The key that must have made ``entry``, or why there is none."""
    if entry.key_id == UNKEYED:
        if walk.keyed:
            return None, "made without the key after the chain was keyed (recomputed without it)"
        walk.unkeyed += 1
        return None, ""
    walk.keyed = True
    key = keyring.get(entry.key_id)
    if key is None:
        return None, (
            f"made with an unknown key {entry.key_id} (neither PROVENANCE_AUDIT_KEY "
            "nor one of PROVENANCE_AUDIT_RETIRED_KEYS)"
        )
    return key, ""


def _check_entry(entry: EvidenceEntry, walk: _Walk, row: models.Model | None, keyring: dict) -> str:
    where = f"entry #{entry.seq} ({entry.record_table} {entry.record_id})"
    if entry.prev_hash != walk.prev:
        return f"{where}: the chain is broken before it (entries reordered or removed)"
    key, problem = _entry_key(entry, walk, keyring)
    if problem:
        return f"{where}: {problem}"
    expected = entry_hash(walk.prev, entry.record_table, entry.record_id, entry.content_hash, key)
    if entry.entry_hash != expected:
        return f"{where}: the entry itself was altered (or recomputed without the key)"
    if entry.record_table == SEAL_TABLE:  # chains the unkeyed entries before it: keyed itself
        sealed = key is not None and entry.content_hash == seal_content_hash(walk.prev)
        return "" if sealed else f"{where}: the seal itself was altered"
    if row is None:
        return f"{where}: the record was removed"
    if hashlib.sha256(canonical(row)).hexdigest() != entry.content_hash:
        return f"{where}: the record was edited"
    return ""


def _unsealed(walk: _Walk) -> str:
    """A non-empty chain without a keyed entry: every entry after keying is keyed and
    migrate seals an older chain, so this one was rewritten by someone without the key."""
    if walk.checked and not walk.keyed:
        return (
            f"none of the {walk.checked} entries is keyed: the chain was recomputed "
            "without the key (or an old chain was never sealed: run migrate)"
        )
    return ""


def _unchained(tables: dict, seen: set) -> str:
    """Evidence rows that never joined the chain (written around the ledger)."""
    for table, model in tables.items():
        queryset = model.objects.all()
        if table == "citations_queryexecution":
            queryset = queryset.exclude(status="running")
        for pk in queryset.values_list("pk", flat=True).iterator(chunk_size=5000):
            if (table, str(pk)) not in seen:
                return f"{table} {pk}: the record is not in the chain"
    return ""


STALE_NAMED = 5  # stuck answers named in the verdict; the count covers the rest


def _stale_running(stale_seconds: int) -> str:
    """Answers still ``running`` long after any answer takes: their process died, and
    they hold no evidence yet. The sweeper marks them failed and chains that."""
    executions = apps.get_model("citations.QueryExecution")
    stale = executions.objects.filter(
        status="running", created_at__lt=timezone.now() - timedelta(seconds=stale_seconds)
    )
    named = [
        str(pk) for pk in stale.order_by("created_at").values_list("pk", flat=True)[:STALE_NAMED]
    ]
    if not named:
        return ""
    return (
        f"citations_queryexecution {', '.join(named)}: {stale.count()} answer(s) still "
        f"running after {stale_seconds} s (stuck; the sweeper marks them failed)"
    )


def ledger_record_status(record: models.Model, *, chained_later: bool = False) -> str:
    """How ``record`` stands in the chain, in words for an officer: its entry and
    whether its content still hashes to what was chained; when it has no entry, "not
    chained yet" if ``chained_later`` (an answer is chained once it completes), else
    "MISSING from the chain"."""
    entry = EvidenceEntry.objects.filter(
        record_table=record._meta.db_table, record_id=str(record.pk)
    ).first()
    if entry is None:
        return "not chained yet" if chained_later else "MISSING from the chain"
    digest = hashlib.sha256(canonical(record)).hexdigest()
    state = "intact" if digest == entry.content_hash else "EDITED since it was chained"
    return f"entry #{entry.seq}, {state}"


def ledger_head() -> dict:
    """The chain's last entry and how many entries lead up to it."""
    entry = EvidenceEntry.objects.order_by("-seq").first()
    if entry is None:
        return {"entries": 0, "seq": 0, "entry_hash": GENESIS}
    return {
        # counted up to the entry read, so an append committed meanwhile is not counted
        "entries": EvidenceEntry.objects.filter(seq__lte=entry.seq).count(),
        "seq": entry.seq,
        "entry_hash": entry.entry_hash,
        "created_at": entry.created_at.isoformat(),
    }


def ledger_missing_head(head: dict) -> str:
    """Why the chain no longer holds the exported ``head`` at its place ("" if it does):
    then it only grew since (each entry's hash covers every entry before it)."""
    seq = int(head.get("seq", 0))
    if seq == 0:
        return ""
    entry = EvidenceEntry.objects.filter(seq=seq).first()
    if entry is None or entry.entry_hash != head.get("entry_hash"):
        return f"the exported head #{seq} {head.get('entry_hash')} is no longer in the chain"
    if "entries" in head:
        count = EvidenceEntry.objects.filter(seq__lte=seq).count()
        if count != int(head["entries"]):
            return f"the exported head #{seq} had {head['entries']} entries up to it, now {count}"
    return ""
