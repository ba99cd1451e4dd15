"""Concurrent writers keep one linear hash chain."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from audit.events import document_event_record
from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

WRITERS, EVENTS_EACH = 6, 15


def test_parallel_evidence_writers_produce_one_chain(celery_worker: WorkerProcess) -> None:
    source = factories.data_source()
    record = factories.upload(source, "policy.md", b"# Policy\n\nKeep it safe.\n").file
    assert wait_for_status(record.pk).status == "ready"
    before = EvidenceEntry.objects.count()
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        try:
            start.wait()
            for _ in range(EVENTS_EACH):
                document_event_record(kind="download", file=record, origin=f"10.0.0.{number}")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    entries = list(EvidenceEntry.objects.order_by("seq"))
    assert len(entries) == before + WRITERS * EVENTS_EACH
    for previous, entry in zip(entries, entries[1:], strict=False):
        assert entry.prev_hash == previous.entry_hash, f"fork at #{entry.seq}"
    assert len({e.prev_hash for e in entries}) == len(entries), "two entries share a parent"
    assert ledger_verify().ok
