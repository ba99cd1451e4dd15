"""Reads behind the library page, scoped to one organization."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet

from documents.ingestion import retry_can_help
from documents.models import IN_PROGRESS_STATUSES, DataSource, File, Organization
from documents.web.progress import Progress, file_progress

FILES_PER_PAGE = 50


@dataclass(frozen=True)
class FileRow:
    file: File
    progress: Progress
    retry_can_help: bool = False


def library_page(*, organization: Organization, number: str | int | None) -> Page:
    """One page of every revision, newest upload first; rows carry their progress."""
    files = (
        File.objects.filter(organization=organization)
        .select_related("data_source", "uploaded_by")
        .order_by("-created_at", "name", "-revision")
    )
    page: Page = Paginator(files, FILES_PER_PAGE).get_page(number)  # its Files become FileRows
    page.object_list = [FileRow(f, file_progress(f), retry_can_help(f)) for f in page.object_list]
    return page


def library_busy(*, organization: Organization) -> bool:
    """Whether any file is still being ingested (the page then refreshes itself)."""
    return File.objects.filter(organization=organization, status__in=IN_PROGRESS_STATUSES).exists()


def data_sources_of(*, organization: Organization) -> QuerySet[DataSource]:
    return DataSource.objects.filter(organization=organization).order_by("name")
