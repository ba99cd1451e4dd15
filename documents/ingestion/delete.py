"""Deleting a document: every revision hidden from retrieval, its ingestion
stopped, the evidence kept and the deletion recorded once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from documents.ingestion.cancel import ingestion_stop
from documents.models import IN_PROGRESS_STATUSES, Chunk, File

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from documents.models import ApiKey


# a deletion's reason is a sentence or two, kept whole in the ledger: a longer one
# is refused on every surface, never cut
MAX_REASON_CHARS = 2000


class AlreadyDeleted(Exception):
    """Every revision of the document is deleted already."""


@transaction.atomic
def file_delete(
    *,
    file: File,
    reason: str,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
) -> None:
    """Hide every revision of a document from retrieval; bytes, chunks and the
    answers that cited them stay for evidence, and the deletion is recorded. A
    revision still being ingested is cancelled (:func:`file_cancel`'s way).

    Raises :class:`AlreadyDeleted` when no revision is left to delete, so a
    repeated request records no second deletion.
    """
    from audit.events import actor_label, document_event_record
    from retrieval.services import chunks_retrievable_set

    if not reason.strip():
        raise ValueError("a deletion needs a reason")
    revisions = File.objects.filter(data_source_id=file.data_source_id, name=file.name)
    # the lock makes two requests at once delete (and record) once; newest first, the
    # order publish locks in, so a deletion during a publish waits instead of deadlocking
    live = list(
        revisions.select_for_update()
        .filter(deleted_at__isnull=True)
        .order_by("-revision")
        .values_list("pk", flat=True)
    )
    if not live:
        raise AlreadyDeleted(f"{file.name} is already deleted")
    document_event_record(
        kind="deletion",
        file=file,
        user=user,
        api_key=api_key,
        origin=origin,
        user_agent=user_agent,
        reason=reason,
    )
    stopped = f"cancelled: the document was deleted by {actor_label(user, api_key)}"
    for pk in File.objects.filter(pk__in=live, status__in=IN_PROGRESS_STATUSES).values_list(
        "pk", flat=True
    ):
        ingestion_stop(str(pk), reason=stopped)
    now = timezone.now()
    File.objects.filter(pk__in=live).update(deleted_at=now, deletion_reason=reason)
    chunks_retrievable_set(Chunk.objects.filter(file__in=revisions), retrievable=False)
