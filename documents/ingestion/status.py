"""A file's status moves during ingestion: on to the next stage (releasing the
lease), ``ready`` on a published conversion, or ``failed`` with a reason."""

from __future__ import annotations

import logging

from django.db.models import QuerySet
from django.utils import timezone

from documents.leases import Lease
from documents.models import IN_PROGRESS_STATUSES, Chunk, DocumentMarkdown, File, FileStatus

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


def advance(rows: QuerySet[File], *, to: str, **fields: object) -> int:
    """Move the file(s) in ``rows`` to status ``to``, releasing the lease."""
    return rows.update(
        status=to, lease_owner="", lease_expires_at=None, updated_at=timezone.now(), **fields
    )


def _in_progress(file_id: str) -> QuerySet[File]:
    return File.objects.filter(pk=file_id, status__in=IN_PROGRESS_STATUSES)


def file_fail(
    *, file_id: str, reason: str, refused_by: str = "", lease: Lease | None = None
) -> None:
    """End ingestion with a reason a person can act on; the bytes stay stored.
    ``refused_by`` names the converter that refuses these bytes for good, or the
    per-file limit they exceed. With ``lease``, only while that claim holds the
    file; without, only while the file is in progress (a cancelled or finished
    file keeps its outcome).

    A file converted again (:func:`file_reconvert`) still has its published
    Markdown and chunks: it goes back to ``ready`` on them, with the reason."""
    logger.warning("ingestion of %s failed: %s", file_id, reason)
    rows = lease.rows() if lease is not None else _in_progress(file_id)
    active = DocumentMarkdown.objects.filter(file_id=file_id, is_active=True).first()
    if active is not None:
        message = f"converting again failed; the previous conversion stays in use: {reason}"
        ready_on(rows, active, error_message=message[:2000])
        return
    advance(rows, to=FileStatus.FAILED, error_message=reason[:2000], refused_by=refused_by)


def ready_on(rows: QuerySet[File], markdown: DocumentMarkdown, **fields: object) -> None:
    """``ready`` on a published conversion, its chunk count as progress."""
    chunks = Chunk.objects.filter(markdown=markdown).count()
    advance(rows, to=FileStatus.READY, progress_done=chunks, progress_total=chunks, **fields)
