"""Fair ingestion and crash recovery through the real worker.

A large file's embedding runs in slices that go to the back of the queue, so a
small upload (of any organization) is ready while the large file is still
embedding, and two organizations' large files advance side by side. A stage's
lease is renewed only by a heartbeat of the process doing the work: a killed
worker's file is taken over within a lease and finished exactly once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from documents.models import Chunk, File
from tests import factories
from tests.conftest import wait_for_status
from tests.support.generated import notes_markdown, wait_until
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

LARGE_SECTIONS = 1500  # chunks: many batches, yet a few minutes at most on a 2-core CI host
SECOND_LARGE_SECTIONS = 600
KILLED_SECTIONS = 320  # five batches


@dataclass(frozen=True)
class Sample:
    at: float
    status: str
    done: int
    total: int


def _sample(record: File, started: float) -> Sample:
    status, done, total = File.objects.values_list("status", "progress_done", "progress_total").get(
        pk=record.pk
    )
    return Sample(time.monotonic() - started, status, done, total)


def _embedding_started(record: File) -> bool:
    row = File.objects.values("status", "progress_done").get(pk=record.pk)
    return row["status"] == "embedding" and row["progress_done"] > 0


def _assert_embedded_exactly_once(record: File, samples: list[Sample]) -> None:
    """Every chunk once, every one with a vector, and progress that only grew and
    ends exact."""
    record.refresh_from_db()
    assert record.status == "ready", record.error_message
    markdown = record.markdowns.get(is_active=True)
    chunks = Chunk.objects.filter(file=record)
    assert chunks.count() == markdown.chunks.count() == record.progress_total
    assert record.progress_done == record.progress_total
    assert not chunks.filter(embedding__isnull=True).exists()
    embedding = [s.done for s in samples if s.status == "embedding"]
    assert embedding == sorted(embedding), "progress went backwards"
    assert all(s.done <= s.total for s in samples)


def test_a_small_upload_is_ready_while_large_files_of_two_organizations_share_the_workers(
    celery_worker: WorkerProcess,
) -> None:
    first_org, second_org = factories.organization("Acme"), factories.organization("Globex")
    first_large = factories.upload(
        factories.data_source(first_org), "archive.md", notes_markdown(LARGE_SECTIONS, seed=1)
    ).file
    wait_until(lambda: _embedding_started(first_large), timeout=180, what="embedding starts")

    started = time.monotonic()
    second_source = factories.data_source(second_org)
    small = factories.upload(second_source, "memo.md", b"# Memo\n\nThe office shuts at six.\n")
    second_large = factories.upload(
        second_source, "ledger.md", notes_markdown(SECOND_LARGE_SECTIONS, seed=2)
    ).file
    samples: dict[str, list[Sample]] = {"first": [], "second": [], "small": []}
    while time.monotonic() - started < 600:
        for name, record in (
            ("first", first_large),
            ("second", second_large),
            ("small", small.file),
        ):
            samples[name].append(_sample(record, started))
        if all(s[-1].status in ("ready", "failed") for s in samples.values()):
            break
        time.sleep(0.2)

    small_ready = next(s for s in samples["small"] if s.status == "ready")
    first_then = max((s for s in samples["first"] if s.at <= small_ready.at), key=lambda s: s.at)
    print(f"\nsmall upload ready after {small_ready.at:.1f} s; the large file then "
          f"{first_then.status} {first_then.done}/{first_then.total}")  # fmt: skip
    assert first_then.status == "embedding" and first_then.done < first_then.total, (
        "the small upload waited for the large file"
    )
    assert small_ready.at < 30, f"the small upload took {small_ready.at:.1f} s"

    # neither organization starves: each large file advanced while the other embedded
    both = [
        (a, b)
        for a, b in zip(samples["first"], samples["second"], strict=True)
        if a.status == b.status == "embedding"
    ]
    assert both, "the two large files never embedded at the same time"
    assert both[-1][1].done > both[0][1].done, "the second organization's file starved"
    assert both[-1][0].done > both[0][0].done, "the first organization's file starved"
    (first_from, second_from), (first_to, second_to) = both[0], both[-1]
    span = first_to.at - first_from.at
    print(f"both embedding for {span:.1f} s: first {first_from.done}->{first_to.done}, "
          f"second {second_from.done}->{second_to.done}")  # fmt: skip
    _assert_embedded_exactly_once(first_large, samples["first"])
    _assert_embedded_exactly_once(second_large, samples["second"])


def test_a_killed_workers_file_is_taken_over_within_a_lease_and_finished_exactly_once(
    celery_worker: WorkerProcess,
) -> None:
    """kill -9 mid-embedding of a file of many batches: nothing renews its lease any
    more (only the dead worker's heartbeat did), so it expires within a lease; a
    fresh worker takes the file over and finishes it within two minutes of the
    kill, exactly once."""
    record = factories.upload(
        factories.data_source(), "register.md", notes_markdown(KILLED_SECTIONS, seed=3)
    ).file
    wait_until(lambda: _embedding_started(record), timeout=180, what="embedding starts")
    celery_worker.kill()
    killed = time.monotonic()
    record.refresh_from_db()
    chunk_ids = set(Chunk.objects.filter(file=record).values_list("pk", flat=True))
    done_at_kill = record.progress_done
    assert record.status == "embedding" and 0 < done_at_kill < record.progress_total

    lease, sweep = settings.PROVENANCE_INGEST_LEASE_SECONDS, settings.PROVENANCE_STALL_SWEEP_SECONDS
    time.sleep(lease + 1)
    record.refresh_from_db()
    expiry = record.lease_expires_at
    assert expiry is None or expiry < timezone.now(), "a lease was renewed after the kill"

    celery_worker.start()
    started = time.monotonic()
    samples: list[Sample] = []

    def taken_over() -> bool:
        samples.append(_sample(record, killed))
        return samples[-1].done > done_at_kill

    takeover = wait_until(taken_over, timeout=120, interval=0.2, what="a fresh worker takes over")
    finished = wait_for_status(record.pk, timeout=max(1.0, 120 - (time.monotonic() - killed)))
    samples.append(_sample(record, killed))
    print(f"\nworker started {started - killed:.1f} s after the kill; its first batch of the "
          f"file committed {takeover:.1f} s later; ready {samples[-1].at:.1f} s after the kill "
          f"(lease {lease} s, sweep every {sweep} s)")  # fmt: skip
    assert finished.status == "ready", finished.error_message
    assert set(Chunk.objects.filter(file=record).values_list("pk", flat=True)) == chunk_ids, (
        "the chunks were made again"
    )
    _assert_embedded_exactly_once(record, samples)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM documents_chunk WHERE file_id = %s AND is_retrievable"
            " AND embedding IS NOT NULL",
            [record.pk],
        )
        assert cursor.fetchone()[0] == len(chunk_ids)
