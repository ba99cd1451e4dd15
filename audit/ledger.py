"""The hash chain over evidence records.

Appends take a transaction-scoped advisory lock, so concurrent writers queue
up and the chain stays linear. Each entry hashes the record's canonical
content as read back from the database, so verification compares like with
like years later.
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from django.apps import apps
from django.db import connection, models, transaction

from audit.models import EvidenceEntry

GENESIS = "0" * 64
_LOCK_KEY = 0x50524F56  # "PROV": one lock id for every writer of the chain

# tables whose rows are evidence, in the order a verifier reports them
CHAINED_MODELS = (
    "citations.QueryExecution",
    "citations.RetrievalHit",
    "citations.QuotedSource",
    "citations.ClaimCitation",
    "citations.RagTrace",
    "audit.DocumentEvent",
)


def _value(value: object) -> object:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    return value


def canonical(record: models.Model) -> bytes:
    """Every concrete column of the row, as sorted compact JSON."""
    fields = {f.attname: _value(getattr(record, f.attname)) for f in record._meta.concrete_fields}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()


def _entry_hash(prev: str, table: str, record_id: str, content_hash: str) -> str:
    return hashlib.sha256(f"{prev}|{table}|{record_id}|{content_hash}".encode()).hexdigest()


@transaction.atomic
def ledger_append(records: Sequence[models.Model]) -> list[EvidenceEntry]:
    """Chain ``records`` (re-read from the database) after the current head."""
    if not records:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
    head = EvidenceEntry.objects.order_by("-seq").values_list("entry_hash", flat=True).first()
    prev = head or GENESIS
    entries = []
    fresh = _reread(records)
    organizations = _organizations(fresh)
    for record in fresh:
        table = record._meta.db_table
        content_hash = hashlib.sha256(canonical(record)).hexdigest()
        entry_hash = _entry_hash(prev, table, str(record.pk), content_hash)
        entries.append(
            EvidenceEntry(
                record_table=table,
                record_id=str(record.pk),
                content_hash=content_hash,
                prev_hash=prev,
                entry_hash=entry_hash,
                organization_id=organizations[(table, record.pk)],
            )
        )
        prev = entry_hash
    return EvidenceEntry.objects.bulk_create(entries)


def _organizations(records: Sequence[models.Model]) -> dict[tuple[str, object], object]:
    """Each record's organization, so an officer's scoped list shows the whole chain
    of their answers: the record's own, or, for the rows of an answer (hits, quoted
    sources, claims, traces), that of its query execution."""
    executions = apps.get_model("citations.QueryExecution")
    query_ids = {getattr(r, "query_id", None) for r in records if not hasattr(r, "organization_id")}
    query_ids.discard(None)
    of_query = dict(
        executions.objects.filter(pk__in=query_ids).values_list("pk", "organization_id")
    )
    return {
        (r._meta.db_table, r.pk): (
            r.organization_id
            if hasattr(r, "organization_id")
            else of_query.get(getattr(r, "query_id", None))
        )
        for r in records
    }


def _reread(records: Sequence[models.Model]) -> list[models.Model]:
    """The rows as stored (database rounding and JSON normalisation included)."""
    by_model: dict[type[models.Model], list] = {}
    for record in records:
        by_model.setdefault(type(record), []).append(record.pk)
    fresh = {}
    for model, pks in by_model.items():
        for row in model.objects.filter(pk__in=pks):
            fresh[(model, row.pk)] = row
    return [fresh[(type(r), r.pk)] for r in records]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: int
    problem: str = ""


def _models_by_table() -> dict[str, type[models.Model]]:
    chained = [apps.get_model(label) for label in CHAINED_MODELS]
    return {model._meta.db_table: model for model in chained}


def _batches(size: int = 2000) -> Iterator[list[EvidenceEntry]]:
    last = 0
    while batch := list(EvidenceEntry.objects.filter(seq__gt=last).order_by("seq")[:size]):
        yield batch
        last = batch[-1].seq


def ledger_verify() -> Verdict:
    """Recompute the chain; the first edited, removed, reordered or unchained record fails it."""
    tables, prev, checked, seen = _models_by_table(), GENESIS, 0, set()
    for batch in _batches():
        rows = _load_rows(tables, batch)
        for entry in batch:
            problem = _check_entry(entry, prev, rows.get((entry.record_table, entry.record_id)))
            if problem:
                return Verdict(False, checked, problem)
            seen.add((entry.record_table, entry.record_id))
            prev, checked = entry.entry_hash, checked + 1
    unchained = _unchained(tables, seen)
    if unchained:
        return Verdict(False, checked, unchained)
    return Verdict(True, checked)


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


def _check_entry(entry: EvidenceEntry, prev: str, row: models.Model | None) -> str:
    where = f"entry #{entry.seq} ({entry.record_table} {entry.record_id})"
    if entry.prev_hash != prev:
        return f"{where}: the chain is broken before it (entries reordered or removed)"
    if entry.entry_hash != _entry_hash(
        prev, entry.record_table, entry.record_id, entry.content_hash
    ):
        return f"{where}: the entry itself was altered"
    if row is None:
        return f"{where}: the record was removed"
    if hashlib.sha256(canonical(row)).hexdigest() != entry.content_hash:
        return f"{where}: the record was edited"
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


def ledger_head() -> dict:
    entry = EvidenceEntry.objects.order_by("-seq").first()
    if entry is None:
        return {"seq": 0, "entry_hash": GENESIS}
    return {
        "seq": entry.seq,
        "entry_hash": entry.entry_hash,
        "created_at": entry.created_at.isoformat(),
    }


def ledger_grew_from(head: dict) -> bool:
    """True if the chain still holds the exported ``head`` at its place."""
    if int(head.get("seq", 0)) == 0:
        return True
    entry = EvidenceEntry.objects.filter(seq=int(head["seq"])).first()
    return entry is not None and entry.entry_hash == head.get("entry_hash")
