"""The chain head, exported on a schedule to a place the database cannot reach.

A superuser can switch the triggers off and cut or truncate the chain together
with its records: what is left still chains. An exported head (entry count,
last seq and hash, signed with the chain's HMAC key) is the proof of what the
chain held; the verifier checks that the chain still holds the latest one.

Exports go to the ``PROVENANCE_AUDIT_HEAD_STORAGE`` backend: a directory by
default, or an S3 bucket with object lock (docs/audit.md). A head is written
only when the chain has grown since the latest one, under a name that sorts by
time and is never overwritten; the newest ``PROVENANCE_AUDIT_HEAD_KEEP`` are
kept, so an idle system writes nothing and a busy one keeps a bounded window.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.db import connection, transaction
from django.utils import timezone

from audit.keys import audit_key, audit_keyring, digest
from audit.ledger import ledger_head, ledger_missing_head

logger = logging.getLogger(__name__)

HEAD_FORMAT = "provenance-audit-head/1"
HEAD_PREFIX, HEAD_SUFFIX = "head-", ".json"
_EXPORT_LOCK_KEY = 0x50524F57  # one exporter at a time (and never during a test flush)


def head_storage() -> Storage:
    return storages.create_storage(settings.PROVENANCE_AUDIT_HEAD_STORAGE)


def _canonical(head: dict) -> bytes:
    unsigned = {k: v for k, v in head.items() if k != "signature"}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()


def head_signed() -> dict:
    """The chain's current head, signed with the chain's key."""
    key = audit_key()
    head = {
        "format": HEAD_FORMAT,
        **ledger_head(),
        "exported_at": timezone.now().isoformat(),
        "key_id": key.key_id,
    }
    return {**head, "signature": digest(_canonical(head), key)}


def head_signature_problem(head: dict) -> str:
    """Why ``head`` is not a head this system signed ("" if it is)."""
    key = audit_keyring().get(str(head.get("key_id", "")))
    if key is None:
        return f"the exported head is signed with an unknown key {head.get('key_id')!r}"
    if not hmac.compare_digest(str(head.get("signature", "")), digest(_canonical(head), key)):
        return "the exported head's signature does not match (forged or altered)"
    return ""


def head_problem(head: dict, *, signed: bool = True) -> str:
    """Why the chain does not prove it only grew since ``head`` ("" if it does).
    ``signed=False`` accepts a head without a signature (exported by hand before
    heads were signed); a head that carries one must match it."""
    if signed or "signature" in head:
        problem = head_signature_problem(head)
        if problem:
            return problem
    return ledger_missing_head(head)


def _names(storage: Storage) -> list[str]:
    try:
        _, files = storage.listdir("")
    except FileNotFoundError:  # nothing exported yet
        return []
    return sorted(n for n in files if n.startswith(HEAD_PREFIX) and n.endswith(HEAD_SUFFIX))


def head_latest(storage: Storage | None = None) -> tuple[str, dict] | None:
    """The newest exported head and its name, or None before the first export."""
    storage = storage or head_storage()
    names = _names(storage)
    if not names:
        return None
    with storage.open(names[-1]) as handle:
        return names[-1], json.loads(handle.read())


def _same_head(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in ("seq", "entry_hash", "entries"))


def audit_head_export() -> str | None:
    """Write the signed head if the chain grew since the latest export; the name
    written, or None. Head read and file written under one lock, so a test flush
    (which removes the exported heads) never leaves a head of what it erased."""
    storage = head_storage()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_EXPORT_LOCK_KEY])
        head = head_signed()
        latest = head_latest(storage)
        if head["seq"] == 0 or (latest and _same_head(latest[1], head)):
            return None
        stamp = timezone.now().strftime("%Y%m%dT%H%M%S%fZ")
        name = storage.save(
            f"{HEAD_PREFIX}{stamp}-{head['seq']:012d}{HEAD_SUFFIX}",
            ContentFile(json.dumps(head, indent=2).encode()),
        )
    _prune(storage)
    return name


def _prune(storage: Storage) -> None:
    """Keep the newest heads only. In a bucket with object lock the delete only hides
    a head (a delete marker); its locked version stays until its retention ends."""
    names = _names(storage)
    for name in names[: max(0, len(names) - settings.PROVENANCE_AUDIT_HEAD_KEEP)]:
        try:
            storage.delete(name)
        except Exception:  # best effort: a bucket may refuse deletes (object lock)
            logger.warning("could not remove the old audit head %s", name, exc_info=True)


@contextmanager
def head_exports_paused() -> Iterator[None]:
    """No head is exported meanwhile (held by the test flush, which erases the chain
    and then its exported heads)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [_EXPORT_LOCK_KEY])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_EXPORT_LOCK_KEY])


def audit_heads_clear() -> int:
    """Remove every exported head; only a test flush, which erased the chain, does."""
    storage = head_storage()
    names = _names(storage)
    for name in names:
        storage.delete(name)
    return len(names)
