"""Running a file's pipeline again: stalled files resumed, failed ones retried
(when retrying can help), ready ones converted again."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from documents.ingestion.convert import converter_label
from documents.ingestion.limits import CHUNKS_LIMIT, MARKDOWN_LIMIT
from documents.ingestion.queueing import ingestion_queue, queue_for
from documents.models import IN_PROGRESS_STATUSES, File, FileStatus

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from documents.models import ApiKey

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


def retry_can_help(file: File) -> bool:
    """A failed file is worth retrying unless the current converter refused its bytes
    for good (a newer converter version may read them) or they exceed a per-file
    limit as it stands (a raised one may let them through); a deleted one is not."""
    hopeless = {converter_label(file.kind), MARKDOWN_LIMIT.label, CHUNKS_LIMIT.label}
    return (
        file.status == FileStatus.FAILED
        and file.deleted_at is None
        and file.refused_by not in hopeless
    )


def ingestion_resume_stalled() -> list[str]:
    """Re-queue files whose worker died (lease expired: its heartbeat stopped) or
    whose message may have been lost (no lease, and no news for
    ``PROVENANCE_INGEST_REQUEUE_SECONDS``: long, as a file waiting behind a
    backlog looks the same)."""
    now = timezone.now()
    quiet = now - timedelta(seconds=settings.PROVENANCE_INGEST_REQUEUE_SECONDS)
    stalled = File.objects.filter(status__in=IN_PROGRESS_STATUSES, deleted_at__isnull=True).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=quiet)
    )
    from documents.tasks import pipeline_for

    file_ids = []
    for pk in stalled.values_list("pk", flat=True):
        file_id = str(pk)
        # still stalled (not claimed meanwhile): its expired lease goes, so the file is
        # sent once per lease length, not at every sweep until a worker claims it
        if not stalled.filter(pk=pk).update(updated_at=now, lease_expires_at=None):
            continue
        logger.info("resuming stalled ingestion of %s", file_id)
        pipeline_for(file_id, queue=queue_for(file_id)).apply_async()
        file_ids.append(file_id)
    return file_ids


@transaction.atomic
def file_reconvert(
    *,
    file: File,
    reason: str,
    user: AbstractBaseUser | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
) -> bool:
    """Run a ready file through the pipeline again, for a new converter version;
    the request is recorded in the document's ledger with ``reason``.

    Its published Markdown and chunks stay active (and retrievable) until the new
    ones are published; then they stay stored for the answers that cited them.
    The stages run on the background queue, so new uploads are not held behind a
    library's worth of re-conversions. False when the file is not ready (in
    progress, failed), deleted or superseded.
    """
    from audit.events import document_event_record

    queued = _requeue(
        file,
        queue=settings.PROVENANCE_BACKGROUND_QUEUE,
        status=FileStatus.READY,
        deleted_at__isnull=True,
        superseded_at__isnull=True,
    )
    if queued:
        document_event_record(
            kind="reconversion",
            file=file,
            user=user,
            origin=origin,
            user_agent=user_agent,
            reason=reason,
        )
    return queued


@transaction.atomic
def file_retry(
    *,
    file: File,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
) -> bool:
    """Run a failed (or cancelled) file's ingestion again from the start; recorded in
    the document's ledger. False when it has not failed (nothing is recorded)."""
    from audit.events import document_event_record

    queued = _requeue(file, status=FileStatus.FAILED, deleted_at__isnull=True)
    if queued:
        document_event_record(
            kind="retry",
            file=file,
            user=user,
            api_key=api_key,
            origin=origin,
            user_agent=user_agent,
        )
    return queued


def _requeue(file: File, *, queue: str | None = None, **still: object) -> bool:
    """Back to ``pending`` and queued on ``queue``, if the file still matches ``still``."""
    updated = File.objects.filter(pk=file.pk, **still).update(
        status=FileStatus.PENDING,
        error_message="",
        refused_by="",
        lease_owner="",
        lease_expires_at=None,
        progress_done=0,
        progress_total=0,
        updated_at=timezone.now(),
    )
    if updated:
        ingestion_queue(file_id=file.pk, queue=queue)
    return bool(updated)
