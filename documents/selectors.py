"""Reads scoped to one organization: every lookup a caller makes goes through here."""

from __future__ import annotations

import uuid

from django.db.models import Case, Q, QuerySet, When
from django.http import Http404

from documents.converters import Converter
from documents.models import Chunk, DocumentMarkdown, File, FileStatus, Organization


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


def chunk_ids_of(*, markdown: DocumentMarkdown) -> list[uuid.UUID]:
    """The ids of the Markdown's chunks, in their order in it."""
    return list(markdown.chunks.order_by("position").values_list("id", flat=True))


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


def markdowns_outdated(
    *, current: dict[str, Converter], files: QuerySet[File] | None = None
) -> QuerySet[DocumentMarkdown]:
    """Active Markdown of current, ready files (of ``files`` if given) of
    ``current``'s kinds whose converter is not the one in use for their kind.

    Oldest file first, but files whose last re-conversion failed come last, so a
    file that keeps failing never holds the rest back behind ``reconvert --limit``.
    The Markdown text itself is not loaded.
    """
    markdowns = (
        DocumentMarkdown.objects.filter(
            is_active=True,
            file__status=FileStatus.READY,
            file__superseded_at__isnull=True,
            file__deleted_at__isnull=True,
        )
        .select_related("file")
        .defer("markdown", "line_pages", "front_matter", "metadata")
    )
    if files is not None:
        markdowns = markdowns.filter(file__in=files)
    outdated = Q(pk__in=[])
    for kind, converter in current.items():
        outdated |= Q(file__kind=kind) & ~Q(
            converter=converter.name, converter_version=converter.version
        )
    failed_before = Case(When(file__error_message="", then=0), default=1)
    return markdowns.filter(outdated).order_by(failed_before, "file__created_at", "file__pk")


def converter_change(*, markdown: DocumentMarkdown, current: Converter) -> str:
    """What converting ``markdown``'s file again changes: "name version -> name version"."""
    return f"{markdown.converter} {markdown.converter_version} -> {current.name} {current.version}"


def files_without_context(*, organization_name: str | None = None) -> QuerySet[File]:
    """Current ready files whose retrievable chunks were made before chunks had a
    context (documents/chunk_context.py), oldest first."""
    without = Chunk.objects.filter(is_retrievable=True, context="").values("file_id")
    files = File.objects.filter(
        pk__in=without, status=FileStatus.READY, deleted_at__isnull=True
    ).order_by("created_at")
    if organization_name:
        files = files.filter(organization__name=organization_name)
    return files
