"""A stage's lease is renewed by a heartbeat of the process doing the work, and
by nothing else: not by a helper's message, not after the claim was lost."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from documents import ingestion
from documents.leases import Heartbeat, heartbeat, lease_claim
from documents.models import File
from tests import factories
from tests.support.generated import notes_markdown, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _unqueued(name: str, data: bytes, *, status: str) -> File:
    """An upload set to ``status`` in its own transaction: the pipeline message it
    queues (a session worker may be running) finds nothing to claim."""
    with transaction.atomic():
        record = factories.upload(factories.data_source(), name, data).file
        File.objects.filter(pk=record.pk).update(status=status)
    return record


def _heartbeat_connections(token: str) -> int:
    """Other connections whose last statement renewed this lease (the values are
    bound into the statement's text)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE %s",
            [f"%lease_expires_at%{token}%"],
        )
        return cursor.fetchone()[0]


@override_settings(PROVENANCE_INGEST_LEASE_SECONDS=3)
def test_a_heartbeat_keeps_a_stage_longer_than_its_lease_and_closes_its_connection() -> None:
    record = _unqueued("memo.md", b"# Memo\n\nShort.\n", status="failed")
    lease = lease_claim(str(record.pk), statuses=("failed",), working="failed")
    assert lease is not None
    with heartbeat(lease):
        time.sleep(5)  # longer than the lease: only the heartbeat keeps it
        record.refresh_from_db()
        expires = record.lease_expires_at
        assert expires is not None and expires > timezone.now() and lease.held()
        assert lease_claim(str(record.pk), statuses=("failed",), working="failed") is None
        assert _heartbeat_connections(lease.token) == 1
    # a closed connection's server process leaves pg_stat_activity a moment later
    wait_until(
        lambda: _heartbeat_connections(lease.token) == 0,
        timeout=3,
        what="the heartbeat's connection is closed",
    )


@override_settings(PROVENANCE_INGEST_LEASE_SECONDS=3)
def test_a_heartbeat_stops_once_its_claim_is_gone() -> None:
    record = _unqueued("memo.md", b"# Memo\n\nShort.\n", status="failed")
    lease = lease_claim(str(record.pk), statuses=("failed",), working="failed")
    assert lease is not None
    beat = Heartbeat(lease)
    beat.start()
    File.objects.filter(pk=record.pk).update(lease_owner="cancelled", lease_expires_at=None)
    beat.join(timeout=5)
    assert not beat.is_alive() and beat.lost.is_set()
    assert File.objects.get(pk=record.pk).lease_expires_at is None, "renewed a lost lease"


def test_a_helpers_message_never_renews_a_dead_owners_lease() -> None:
    """The owner died mid-embedding (its lease expired); a leftover helper message still
    runs and embeds, but leaves the lease expired, so the stall sweep takes over."""
    with transaction.atomic():  # converted and chunked before any worker sees it
        source = factories.data_source()
        record = factories.upload(source, "notes.md", notes_markdown(40, seed=5)).file
        for stage in (ingestion.file_convert, ingestion.file_chunk):
            assert stage(file_id=str(record.pk))
        File.objects.filter(pk=record.pk).update(lease_expires_at=timezone.now() + timedelta(1))
    # its owner's last renewal; it died just after
    renewed = timezone.now() + timedelta(seconds=60)
    File.objects.filter(pk=record.pk).update(lease_owner="dead-owner", lease_expires_at=renewed)
    markdown = record.markdowns.get()
    assert ingestion.file_embed_share(file_id=str(record.pk), markdown_id=str(markdown.pk)) > 0
    record.refresh_from_db()
    assert record.lease_expires_at == renewed and record.lease_owner == "dead-owner"
    assert record.progress_done == record.progress_total, "progress is still counted"
    expired = timezone.now() - timedelta(seconds=1)
    File.objects.filter(pk=record.pk).update(lease_expires_at=expired)
    taken = str(record.pk) in ingestion.ingestion_resume_stalled()
    record.refresh_from_db()
    # this sweep took it over, or the session worker did a moment before: the upload's
    # own pipeline message claims an expired lease too, and so does the worker's beat
    # sweep (every 2 s in the test settings); either way the expired lease is gone
    assert taken or record.lease_expires_at != expired, "the expired lease was left"


@override_settings(PROVENANCE_INGEST_LEASE_SECONDS=8, PROVENANCE_INGEST_REQUEUE_SECONDS=600)
def test_the_sweep_resends_a_dead_workers_file_at_once_and_a_queued_one_only_much_later() -> None:
    """An expired lease means a dead worker: sent again at the next sweep. A file with
    no lease is waiting in a queue (a backlog looks the same as a lost message): sent
    again only after the re-queue delay, so a backlog is not sent twice over."""
    quiet = timezone.now() - timedelta(seconds=120)
    dead = _unqueued("dead.md", b"# Dead\n\nA worker died on it.\n", status="embedding")
    waiting = _unqueued("queued.md", b"# Queued\n\nIt waits its turn.\n", status="pending")
    File.objects.filter(pk=dead.pk).update(
        lease_owner="dead", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    File.objects.filter(pk=waiting.pk).update(updated_at=quiet)
    assert ingestion.ingestion_resume_stalled() == [str(dead.pk)]
    assert ingestion.ingestion_resume_stalled() == [], "sent once, not at every sweep"
    File.objects.filter(pk=waiting.pk).update(updated_at=quiet - timedelta(seconds=600))
    assert ingestion.ingestion_resume_stalled() == [str(waiting.pk)]
