"""A stage's hold on one file, renewed by a heartbeat of the process doing the work.

A stage claims its file with a conditional UPDATE that writes a fresh token and
an expiry on the row. While the stage runs, a thread of the same process extends
the expiry every third of ``PROVENANCE_INGEST_LEASE_SECONDS``, and nothing else
ever does: no message, no other task. A process that dies stops beating, its
lease expires and the stall sweep hands the file to another worker. A stage's
writes are conditional on its token, so a stage whose file was cancelled,
deleted or taken over in the meantime stores nothing.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, connections
from django.db.models import Q, QuerySet
from django.utils import timezone

from documents.models import File

logger = logging.getLogger(__name__)


class LeaseLost(Exception):
    """The file was cancelled, deleted or taken over while this stage held it."""


@dataclass(frozen=True)
class Lease:
    """One claim of one file by one stage run: ``token`` is on the row while it holds."""

    file_id: str
    token: str

    def rows(self) -> QuerySet[File]:
        """The file, as long as this claim still holds it (empty once it does not)."""
        return File.objects.filter(pk=self.file_id, lease_owner=self.token)

    def held(self) -> bool:
        """The cheap check a stage makes between units of work (one primary-key read)."""
        return self.rows().exists()

    def hold_locked(self) -> bool:
        """Lock the row for the caller's transaction if this claim still holds it: a
        stage stores its output only then, and a cancellation waits for it (or wins)."""
        return self.rows().select_for_update().exists()


def lease_expiry() -> datetime:
    return timezone.now() + timedelta(seconds=settings.PROVENANCE_INGEST_LEASE_SECONDS)


def lease_claim(
    file_id: str, *, statuses: tuple[str, ...], working: str, turn: str | None = None
) -> Lease | None:
    """Take the file for one stage; ``None`` if another process holds it, it moved
    on, or it was deleted. ``turn`` (a queued slice's token) claims only if the row
    still carries it: a duplicate or outdated message finds another one and exits.
    """
    now = timezone.now()
    rows = File.objects.filter(pk=file_id, status__in=statuses, deleted_at__isnull=True).filter(
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
    )
    if turn is not None:
        rows = rows.filter(lease_owner=turn)
    lease = Lease(file_id=str(file_id), token=uuid.uuid4().hex)
    claimed = rows.update(
        status=working, lease_owner=lease.token, lease_expires_at=lease_expiry(), updated_at=now
    )
    return lease if claimed == 1 else None


def lease_pass(lease: Lease) -> str | None:
    """Release the file to its next turn: the row keeps a new token (returned) and no
    expiry, so only the message carrying that token (or the stall sweep, once the
    file has had no news for ``PROVENANCE_INGEST_REQUEUE_SECONDS``) claims it next;
    ``None`` if it was not held."""
    turn = uuid.uuid4().hex
    passed = lease.rows().update(lease_owner=turn, lease_expires_at=None, updated_at=timezone.now())
    return turn if passed else None


class Heartbeat(threading.Thread):
    """Extends the lease every third of its length until stopped or no longer held,
    on a database connection of its own that it closes when it ends."""

    def __init__(self, lease: Lease) -> None:
        super().__init__(name=f"lease-{lease.file_id}", daemon=True)
        self.lease = lease
        self.interval = settings.PROVENANCE_INGEST_LEASE_SECONDS / 3
        self.stopped = threading.Event()
        self.lost = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                if not self._beat():
                    self.lost.set()
                    return
        finally:
            connections["default"].close()

    def _beat(self) -> bool:
        """One renewal; a database error is logged and retried at the next beat (the
        lease is three beats long)."""
        try:
            return bool(self.lease.rows().update(lease_expires_at=lease_expiry()))
        except DatabaseError as error:
            logger.warning("lease of %s not renewed: %s", self.lease.file_id, error)
            connections["default"].close()
            return True

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=self.interval + 10)


@contextmanager
def heartbeat(lease: Lease) -> Iterator[None]:
    """Keep ``lease`` alive while the block runs. Inside a caller's transaction (a
    stage run in-process by a test or a command) the claim is invisible to other
    connections, so there is nothing to renew, and a second connection would only
    wait on the row the transaction has locked: no thread then."""
    if connection.in_atomic_block:
        yield
        return
    beat = Heartbeat(lease)
    beat.start()
    try:
        yield
    finally:
        beat.stop()
