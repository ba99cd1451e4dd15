"""Two revisions of one document published at once wait for each other.

Each publish locks its revision and every older one. Taken in any order, the
newer revision's publish could hold the oldest row while the older revision's
publish held its own and waited for that oldest row: a deadlock, which
Postgres breaks by failing one publish, leaving its file stalled until the
lease runs out. Taken newest first (as deletions take them), a publish waits
at the first row another one holds and holds nothing older meanwhile.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection, connections, transaction

from documents.ingestion.publish import publish
from documents.leases import Lease
from documents.models import Chunk, DataSource, File
from tests import factories
from tests.conftest import wait_for_status
from tests.support.tamper import triggers_off
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _revision(source: DataSource, text: bytes) -> File:
    record = factories.upload(source, "policy.md", text).file
    assert wait_for_status(record.pk).status == "ready"
    return File.objects.get(pk=record.pk)


def _waiting_for_a_lock(timeout: float = 20) -> bool:
    """Whether another backend of this database waits for a row lock (within ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            # a transaction sees one snapshot of the activity unless told to drop it
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                " AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return True
        time.sleep(0.05)
    return False


def test_a_publish_locks_revisions_newest_first(celery_worker: WorkerProcess) -> None:
    source = factories.data_source()
    oldest = _revision(source, b"# Policy\n\nVersion zero.\n")
    middle = _revision(source, b"# Policy\n\nVersion one.\n")
    newest = _revision(source, b"# Policy\n\nVersion two.\n")
    # the moment of the race: neither older revision superseded yet
    with triggers_off():
        File.objects.filter(pk__in=[oldest.pk, middle.pk]).update(superseded_at=None)
    markdown = newest.markdowns.get(is_active=True)
    # the newest revision's publish holds its stage's claim, as a running stage does
    lease = Lease(file_id=str(newest.pk), token=uuid.uuid4().hex)
    File.objects.filter(pk=newest.pk).update(lease_owner=lease.token)
    errors: list[BaseException] = []

    def publish_newest() -> None:
        try:
            assert publish(lease, markdown)
        except BaseException as error:  # reported by the test thread
            errors.append(error)
        finally:
            connections.close_all()

    publisher = threading.Thread(target=publish_newest)
    with transaction.atomic():
        # the middle revision's own publish holds its row ...
        File.objects.select_for_update().get(pk=middle.pk)
        publisher.start()
        assert _waiting_for_a_lock(), "the newest revision's publish should wait for the middle one"
        # ... and the newest one's waits there, holding nothing older
        File.objects.select_for_update(nowait=True).get(pk=oldest.pk)
    publisher.join(60)
    assert not publisher.is_alive() and not errors, errors
    superseded = File.objects.filter(pk__in=[oldest.pk, middle.pk], superseded_at__isnull=False)
    assert superseded.count() == 2
    assert set(Chunk.objects.filter(is_retrievable=True).values_list("file_id", flat=True)) == {
        newest.pk
    }
