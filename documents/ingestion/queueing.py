"""Which queue a file's stages go on, and queuing its pipeline once the current
transaction commits."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import transaction

from documents.models import DocumentMarkdown


def ingestion_queue(*, file_id: uuid.UUID, queue: str | None = None) -> None:
    """Queue the pipeline for a file once the current transaction commits, on
    ``queue`` (the default one unless given)."""
    from documents.tasks import pipeline_for

    transaction.on_commit(lambda: pipeline_for(str(file_id), queue=queue).apply_async())


def queue_for(file_id: str) -> str | None:
    """The background queue for a file being converted again (it has a published
    conversion), so its work never runs ahead of new uploads; else the default."""
    again = DocumentMarkdown.objects.filter(file_id=file_id, is_active=True).exists()
    return settings.PROVENANCE_BACKGROUND_QUEUE if again else None
