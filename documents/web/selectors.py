"""Reads behind the library pages, scoped to one organization: the file list with
its search and filters, and a document's page (revisions, chunks, the answers
that cite it)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import Http404, QueryDict

from citations.models import QueryExecution, QuotedSource
from documents.ingestion.requeue import retry_can_help
from documents.models import IN_PROGRESS_STATUSES, Chunk, DataSource, File, Organization
from documents.queue import QueuePlace, queue_places
from documents.web.progress import Progress, file_progress

FILES_PER_PAGE = 50
CHUNKS_PER_PAGE = 20
ANSWERS_SHOWN = 50
DELETED = "deleted"  # the status filter's choice for deleted documents (not a FileStatus)


@dataclass(frozen=True)
class FileRow:
    file: File
    progress: Progress
    retry_can_help: bool = False
    place: QueuePlace | None = None  # while the file waits for a worker


def _rows(files: list[File]) -> list[FileRow]:
    places = queue_places(files)
    return [FileRow(f, file_progress(f), retry_can_help(f), places.get(f.pk)) for f in files]


# --- the file list ----------------------------------------------------------------------


@dataclass(frozen=True)
class LibraryFilters:
    """What the list is narrowed to: part of a name, a status (or ``deleted``), a
    kind, a data source's id; empty means any."""

    name: str = ""
    status: str = ""
    kind: str = ""
    data_source: str = ""

    @classmethod
    def from_query(cls, params: QueryDict) -> LibraryFilters:
        return cls(**{key: params.get(key, "").strip()[:200] for key in cls.__dataclass_fields__})

    def apply(self, files: QuerySet[File]) -> QuerySet[File]:
        if self.name:
            files = files.filter(name__icontains=self.name)
        if self.status == DELETED:
            files = files.filter(deleted_at__isnull=False)
        elif self.status:
            files = files.filter(status=self.status)
        if self.kind:
            files = files.filter(kind=self.kind)
        if self.data_source:
            files = files.filter(data_source_id=_uuid_or_none(self.data_source))
        return files

    @property
    def active(self) -> bool:
        return any(vars(self).values())

    @property
    def query(self) -> str:
        """The filters as a query string, for the pager's links."""
        return urlencode({key: value for key, value in vars(self).items() if value})


def _uuid_or_none(raw: str) -> uuid.UUID | None:
    """A data source id from the query string; anything else matches nothing."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        return None


def library_page(
    *, organization: Organization, number: str | int | None, filters: LibraryFilters | None = None
) -> Page:
    """One page of every revision, newest upload first; rows carry their progress and,
    while they wait, their place in the queue."""
    files = (
        File.objects.filter(organization=organization)
        .select_related("data_source", "uploaded_by")
        .order_by("-created_at", "name", "-revision")
    )
    files = (filters or LibraryFilters()).apply(files)
    page: Page = Paginator(files, FILES_PER_PAGE).get_page(number)  # its Files become FileRows
    page.object_list = _rows(list(page.object_list))
    return page


def library_busy(*, organization: Organization, shown: Page | None = None) -> bool:
    """Whether any file is still being ingested (the page then refreshes itself).

    The rows ``shown`` count too: read a moment before this query, a row may show a
    file in progress that is ready by now, and the page would stop refreshing with
    that row stale (it did, under load); it refreshes once more instead."""
    if shown is not None and any(
        row.file.status in IN_PROGRESS_STATUSES for row in shown.object_list
    ):
        return True
    return File.objects.filter(organization=organization, status__in=IN_PROGRESS_STATUSES).exists()


def data_sources_of(*, organization: Organization) -> QuerySet[DataSource]:
    return DataSource.objects.filter(organization=organization).order_by("name")


def kinds_of(*, organization: Organization) -> list[str]:
    """The kinds of file the organization holds, for the filter."""
    kinds = File.objects.filter(organization=organization).values_list("kind", flat=True)
    return sorted(set(kinds.order_by().distinct()))


# --- a document's page ------------------------------------------------------------------


def _document_uuid(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(raw))
    except ValueError as exc:
        raise Http404("document not found") from exc


def document_revisions(*, organization: Organization, document_id: str) -> list[File]:
    """Every revision of a document of this organization, newest first, or 404 (also
    for another tenant's id)."""
    revisions = list(
        File.objects.filter(organization=organization, document_id=_document_uuid(document_id))
        .select_related("data_source", "uploaded_by", "uploaded_with_key")
        .order_by("-revision")
    )
    if not revisions:
        raise Http404("document not found")
    return revisions


def revision_rows(revisions: list[File]) -> list[FileRow]:
    return _rows(revisions)


def revision_shown(revisions: list[File], wanted: str | None) -> File:
    """The revision whose chunks the page lists: the one asked for (``?revision=N``),
    else the current one, else the newest."""
    if wanted and wanted.isdigit():
        for record in revisions:
            if record.revision == int(wanted):
                return record
        raise Http404("no such revision")
    return next((r for r in revisions if r.is_current), revisions[0])


def chunks_page(*, file: File, number: str | int | None) -> Page:
    """One page of the chunks of the revision's active Markdown, in reading order
    (none while it is being ingested for the first time, or when it failed)."""
    chunks = (
        Chunk.objects.filter(file=file, markdown__is_active=True)
        .defer("embedding", "search_vector", "context")
        .order_by("position")
    )
    return Paginator(chunks, CHUNKS_PER_PAGE).get_page(number)


@dataclass(frozen=True)
class CitingAnswers:
    """The newest answers citing the document that the reader may see, and how many
    there are in all."""

    answers: Sequence[QueryExecution]
    total: int
    everyone: bool  # every member's answers (officers), not only the reader's own


def citing_answers(
    *, organization: Organization, document_id: str, user: User, everyone: bool
) -> CitingAnswers:
    """Answers of the organization whose quoted sources are a revision of the document:
    ``everyone``'s (officers and administrators) or the reader's own."""
    document = _document_uuid(document_id)
    cites = QuotedSource.objects.filter(query=OuterRef("pk"), file__document_id=document)
    answers = QueryExecution.objects.filter(Exists(cites), organization=organization)
    if not everyone:
        answers = answers.filter(caller_user=user)
    shown = (
        answers.select_related("app")
        .annotate(
            cited=Count("quoted_sources", filter=Q(quoted_sources__file__document_id=document))
        )
        .defer("answer")
        .order_by("-created_at")[:ANSWERS_SHOWN]
    )
    rows = list(shown)
    total = len(rows) if len(rows) < ANSWERS_SHOWN else answers.count()
    return CitingAnswers(answers=rows, total=total, everyone=everyone)
