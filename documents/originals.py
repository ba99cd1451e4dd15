"""Originals checked against their recorded sha256 whenever they are read.

A stored original can be edited where it lies (a disk, a bucket) without the
database noticing; the sha256 recorded at upload is sealed into the chain, so every
read re-hashes the bytes: a download, a conversion, the periodic sweep. A mismatch
is recorded as an ``integrity`` event of the file (chained evidence), logged as an
error, and the bytes are not handed out as if intact.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from datetime import datetime

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from audit.events import document_event_record
from audit.ledger import ledger_append
from audit.models import OriginalsCheck
from core.exceptions import DomainRejected
from documents.models import File
from documents.storage import original_open

logger = logging.getLogger(__name__)
BLOCK = 1 << 16  # bytes read and hashed at a time: the stream's step
SWEEP = "the originals sweep"


class OriginalAltered(DomainRejected):
    """The stored bytes no longer hash to the file's recorded sha256 (409
    ``original_altered``: the bytes are not handed out as the original)."""

    def __init__(self, record: File, actual: str) -> None:
        self.record, self.actual = record, actual
        super().__init__(
            f"the stored original of {record.name!r} (file {record.pk}) hashes to {actual}, "
            f"not to its recorded sha256 {record.sha256}: it was altered where it is "
            "stored; the incident is recorded",
            code="original_altered",
            status=409,
        )


def original_altered_record(record: File, actual: str, *, where: str) -> OriginalAltered:
    """Record (an ``integrity`` event, chained) and log a mismatch found by ``where``;
    the exception to raise."""
    error = OriginalAltered(record, actual)
    document_event_record(kind="integrity", file=record, reason=f"{where}: {error}")
    logger.error("INTEGRITY %s: %s", where, error)
    return error


def _blocks(record: File) -> Iterator[bytes]:
    with original_open(record.storage_key) as handle:
        while block := handle.read(BLOCK):
            yield block


def original_digest(record: File) -> str:
    digest = hashlib.sha256()
    for block in _blocks(record):
        digest.update(block)
    return digest.hexdigest()


def original_bytes(record: File, *, where: str) -> bytes:
    """The whole original, verified (a conversion reads it so)."""
    data = b"".join(_blocks(record))
    actual = hashlib.sha256(data).hexdigest()
    if actual != record.sha256:
        raise original_altered_record(record, actual, where=where)
    return data


def original_stream(record: File, *, where: str) -> Iterator[bytes]:
    """The original in blocks, hashed as they go; the last block is held back until
    the whole hash is known, so altered bytes never reach the client complete: the
    stream stops short of its ``Content-Length`` and the client sees a failed
    transfer, never a body that only looks intact."""
    digest, held = hashlib.sha256(), None
    for block in _blocks(record):
        digest.update(block)
        if held is not None:
            yield held
        held = block
    if digest.hexdigest() != record.sha256:
        raise original_altered_record(record, digest.hexdigest(), where=where)
    if held is not None:
        yield held


def originals_verify(
    files: QuerySet[File] | None = None,
    *,
    clock: Callable[[], datetime] = timezone.now,
    progress: Callable[[int], None] | None = None,
) -> OriginalsCheck:
    """Re-hash every stored original (deleted and superseded revisions too: answers
    cite them) and record the sweep as chained evidence: how many were checked, which
    differ or are missing. Each mismatch is also the file's ``integrity`` event."""
    started = clock()
    checked, altered, missing = 0, [], []
    rows = (files if files is not None else File.objects.all()).order_by("created_at", "pk")
    for record in rows.iterator(chunk_size=200):
        try:
            actual = original_digest(record)
        except OSError as exc:  # gone, or unreadable where it is stored
            missing.append({"file": str(record.pk), "error": str(exc)[:500]})
            original_altered_record(record, f"nothing (unreadable: {exc})", where=SWEEP)
        else:
            if actual != record.sha256:
                altered.append(
                    {"file": str(record.pk), "recorded": record.sha256, "actual": actual}
                )
                original_altered_record(record, actual, where=SWEEP)
        checked += 1
        if progress is not None:
            progress(checked)
    check = OriginalsCheck.objects.create(
        started_at=started,
        finished_at=clock(),
        checked=checked,
        altered=altered,
        missing=missing,
    )
    ledger_append([check])
    return check


def originals_check_due(*, clock: Callable[[], datetime] = timezone.now) -> bool:
    """Whether the last sweep is older than ``PROVENANCE_ORIGINALS_CHECK_SECONDS``."""
    last = OriginalsCheck.objects.order_by("-finished_at").first()
    every = settings.PROVENANCE_ORIGINALS_CHECK_SECONDS
    return last is None or (clock() - last.finished_at).total_seconds() >= every
