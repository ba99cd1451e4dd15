"""Where a waiting file stands in the ingestion queue, for the people waiting on it.

The order is the broker's: a file's pipeline is queued when its upload (or retry)
commits, and workers take messages first in, first out, one queue at a time. New
uploads and retries go to the default queue; a file converted again goes to the
background queue (``ingestion.queueing.queue_for``: it has an active Markdown), so only
files on the same queue are counted ahead of it. A pending file's ``updated_at``
is when it entered the queue (the upload, a retry, or the stall sweep sending it
again), and workers serve every organization, so files of every organization are
counted (their number only, never their names). It is an estimate: an embed
stage's slices go back to the end of the queue while they run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from documents.models import IN_PROGRESS_STATUSES, DocumentMarkdown, File, FileStatus

WORKING_STATUSES = tuple(s for s in IN_PROGRESS_STATUSES if s != FileStatus.PENDING)


@dataclass(frozen=True)
class QueuePlace:
    """A pending file's place: ``ahead`` files wait before it on its queue,
    ``working`` files are being converted, chunked or embedded now."""

    ahead: int
    working: int

    @property
    def words(self) -> str:
        if self.ahead == 0:
            waiting = "next in line"
        else:
            waiting = f"{self.ahead} file{'s' if self.ahead != 1 else ''} ahead of this one"
        if self.working:
            return f"{waiting}; {self.working} being processed now"
        return waiting


def _again() -> Exists:
    """The file has a published conversion: it is converted again, on the background queue."""
    return Exists(DocumentMarkdown.objects.filter(file_id=OuterRef("pk"), is_active=True))


def _ahead_of(record: File, *, again: bool) -> Q:
    """Pending on the same queue and queued before ``record`` (ties by id)."""
    earlier = Q(updated_at__lt=record.updated_at) | Q(
        updated_at=record.updated_at, pk__lt=record.pk
    )
    return Q(status=FileStatus.PENDING, again=again) & earlier


def queue_places(files: Iterable[File]) -> dict[uuid.UUID, QueuePlace]:
    """The place of each pending, undeleted file of ``files``, keyed by id, in one
    query: for each file, the files ahead of it on either queue and whether it is on
    the background one, all counted in the same scan of the files in progress."""
    waiting = [f for f in files if f.status == FileStatus.PENDING and f.deleted_at is None]
    if not waiting:
        return {}
    counts: dict[str, Count] = {"working": Count("pk", filter=Q(status__in=WORKING_STATUSES))}
    for index, record in enumerate(waiting):
        counts[f"default_{index}"] = Count("pk", filter=_ahead_of(record, again=False))
        counts[f"background_{index}"] = Count("pk", filter=_ahead_of(record, again=True))
        counts[f"again_{index}"] = Count("pk", filter=Q(pk=record.pk, again=True))
    totals = (
        File.objects.filter(status__in=IN_PROGRESS_STATUSES, deleted_at__isnull=True)
        .annotate(again=_again())
        .aggregate(**counts)
    )
    places = {}
    for index, record in enumerate(waiting):
        queue = "background" if totals[f"again_{index}"] else "default"
        places[record.pk] = QueuePlace(ahead=totals[f"{queue}_{index}"], working=totals["working"])
    return places
