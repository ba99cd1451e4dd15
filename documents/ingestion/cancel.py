"""Cancelling a file's ingestion: whatever stage holds it stops at its next check,
and the file ends failed (or ready on its previous conversion)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from documents.ingestion.status import file_fail
from documents.models import IN_PROGRESS_STATUSES, File

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from documents.models import ApiKey


class NotCancellable(Exception):
    """The file is not being ingested (ready, failed, deleted): there is nothing to stop."""


@transaction.atomic
def file_cancel(
    *,
    file: File,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
    reason: str = "",
) -> None:
    """Stop the ingestion of a file that is not ready yet; recorded in the document's
    ledger with ``reason`` (or the file's new error message when none is given).

    The file ends ``failed`` "cancelled by <who>" (a file being converted again:
    ``ready`` on its previous conversion, saying so) and can be retried. Its
    queued stages exit at their claim, a running one at its next check: between
    embedding batches, at a conversion's progress report (the sandbox is
    stopped), or before a stage stores its output. Raises :class:`NotCancellable`
    when the file is not in progress.
    """
    from audit.events import actor_label, document_event_record

    status = File.objects.select_for_update().values_list("status", flat=True).get(pk=file.pk)
    if status not in IN_PROGRESS_STATUSES:
        raise NotCancellable(f"{file.name} is {status}: there is no ingestion to cancel")
    message = f"cancelled by {actor_label(user, api_key)}"
    ingestion_stop(str(file.pk), reason=message)
    document_event_record(
        kind="cancellation",
        file=file,
        user=user,
        api_key=api_key,
        origin=origin,
        user_agent=user_agent,
        reason=reason or message,
    )


def ingestion_stop(file_id: str, *, reason: str) -> None:
    """End a file's ingestion now, whatever stage holds it (the caller holds its row
    lock): the lease token goes, so the stage's next check or write finds it gone."""
    file_fail(file_id=file_id, reason=reason)
