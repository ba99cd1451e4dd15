"""Reads scoped to one organization: every lookup a caller makes goes through here."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.http import Http404

from documents.models import Chunk, DocumentMarkdown, File, Organization


def _uuid(raw: str | uuid.UUID) -> uuid.UUID:
    try:
        return raw if isinstance(raw, uuid.UUID) else uuid.UUID(str(raw))
    except ValueError as exc:
        raise Http404("not found") from exc


def file_get(*, organization: Organization, file_id: str | uuid.UUID) -> File:
    """A file revision of this organization, or 404 (also for other tenants' ids)."""
    record = (
        File.objects.select_related("data_source", "data_source__vector_database")
        .filter(organization=organization, pk=_uuid(file_id))
        .first()
    )
    if record is None:
        raise Http404("file not found")
    return record


def markdown_active(*, file: File) -> DocumentMarkdown | None:
    return file.markdowns.filter(is_active=True).first()


def chunk_get(*, organization: Organization, database_id: str, chunk_id: str) -> Chunk:
    chunk = (
        Chunk.objects.select_related("file")
        .prefetch_related("locations")
        .filter(
            vector_database_id=_uuid(database_id),
            vector_database__organization=organization,
            pk=_uuid(chunk_id),
        )
        .defer("embedding")
        .first()
    )
    if chunk is None:
        raise Http404("chunk not found")
    return chunk


def files_of(*, organization: Organization) -> QuerySet[File]:
    return File.objects.filter(organization=organization).select_related("data_source")
