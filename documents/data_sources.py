"""Data sources: creating, renaming and deleting them (services), and reading them
and their files (selectors), always within one organization.

A data source is created with its organization's default vector database; the
REST API, ``manage.py ingest`` and ``setup_demo`` all create them here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet

from core.exceptions import DomainRejected
from documents.models import DataSource, File, Organization
from documents.storable_text import unstorable_character
from retrieval.services import vector_database_default

MAX_NAME_CHARS = 200  # DataSource.name's max_length


class DataSourceRejected(DomainRejected):
    """A data source change refused; ``code`` says why."""

    default_param = "name"


def _name_clean(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise DataSourceRejected("a data source needs a name", code="invalid_name")
    if len(name) > MAX_NAME_CHARS:
        raise DataSourceRejected(
            f"a data source name is at most {MAX_NAME_CHARS} characters", code="invalid_name"
        )
    problem = unstorable_character(name)
    if problem:
        raise DataSourceRejected(f"the name contains {problem}", code="invalid_name")
    return name


def _name_taken(organization: Organization, name: str) -> DataSourceRejected:
    return DataSourceRejected(
        f"a data source named {name!r} already exists in {organization.name}",
        code="data_source_exists",
        status=409,
    )


def data_source_create(*, organization: Organization, name: str) -> DataSource:
    """A new data source called ``name`` (trimmed), indexed in the organization's
    default vector database; 409 ``data_source_exists`` when the name is taken."""
    name = _name_clean(name)
    try:
        with transaction.atomic():
            return DataSource.objects.create(
                organization=organization,
                name=name,
                vector_database=vector_database_default(organization=organization),
            )
    except IntegrityError as exc:  # the unique constraint decides between two at once
        raise _name_taken(organization, name) from exc


def data_source_ensure(*, organization: Organization, name: str) -> tuple[DataSource, bool]:
    """The data source called ``name``, created when there is none; and whether it was."""
    found = DataSource.objects.filter(organization=organization, name=name.strip()).first()
    if found is not None:
        return found, False
    try:
        return data_source_create(organization=organization, name=name), True
    except DataSourceRejected as exc:
        if exc.code != "data_source_exists":
            raise
        return DataSource.objects.get(organization=organization, name=name.strip()), False


def data_source_rename(*, data_source: DataSource, name: str) -> DataSource:
    """Give ``data_source`` another name; past answers keep the files they cited."""
    name = _name_clean(name)
    if name == data_source.name:
        return data_source
    try:
        with transaction.atomic():
            data_source.name = name
            data_source.save(update_fields=["name"])
    except IntegrityError as exc:
        data_source.refresh_from_db(fields=["name"])
        raise _name_taken(data_source.organization, name) from exc
    return data_source


@transaction.atomic
def data_source_delete(*, data_source: DataSource) -> None:
    """Delete a data source that never held a file and no app reads from.

    Files, deleted ones too, are evidence that answers cite: a data source that holds
    any is refused (409 ``data_source_not_empty``), as is one an app is bound to
    (409 ``data_source_in_use``: change the app's data sources first).
    """
    locked = DataSource.objects.select_for_update().get(pk=data_source.pk)
    files = File.objects.filter(data_source=locked).count()
    if files:
        raise DataSourceRejected(
            f"{locked.name!r} holds {files} file revision(s), deleted ones included: "
            "they are evidence of the answers that cite them, so it cannot be deleted",
            code="data_source_not_empty",
            status=409,
            param="data_source_id",
        )
    apps = sorted(locked.apps.values_list("name", flat=True))
    if apps:
        raise DataSourceRejected(
            f"{locked.name!r} is used by the app(s) {', '.join(map(repr, apps))}: "
            "take it out of their data sources first",
            code="data_source_in_use",
            status=409,
            param="data_source_id",
        )
    locked.delete()


# selectors


def data_sources_of(*, organization: Organization) -> QuerySet[DataSource]:
    """The organization's data sources by name, with how many file revisions each holds."""
    return (
        DataSource.objects.filter(organization=organization)
        .select_related("organization")
        .annotate(file_count=Count("files"))
        .order_by("name", "id")
    )


def _not_found(raw_id: object) -> DataSourceRejected:
    return DataSourceRejected(
        f"No data source found with id '{raw_id}'.",
        code="not_found",
        status=404,
        param="data_source_id",
    )


def data_source_get(*, organization: Organization, data_source_id: str) -> DataSource:
    """The organization's data source ``data_source_id``; another tenant's is not found."""
    try:
        key = uuid.UUID(str(data_source_id))
    except ValueError as exc:
        raise _not_found(data_source_id) from exc
    found = data_sources_of(organization=organization).filter(pk=key).first()
    if found is None:
        raise _not_found(data_source_id)
    return found


def data_sources_named(*, organization: Organization, refs: Sequence[str]) -> list[DataSource]:
    """The data sources ``refs`` name, each by id or by name, in their order;
    400 ``unknown_data_source`` names those that are neither."""
    ids = {ref: key for ref in refs if (key := _uuid_or_none(ref)) is not None}
    found = DataSource.objects.filter(organization=organization)
    by_id = {str(s.pk): s for s in found.filter(pk__in=ids.values())}
    by_name = {s.name: s for s in found.filter(name__in=[r for r in refs if r not in ids])}
    sources, missing = [], []
    for ref in refs:
        source = by_id.get(str(ids[ref])) if ref in ids else by_name.get(ref)
        if source is None:
            missing.append(ref)
        elif source not in sources:
            sources.append(source)
    if missing:
        raise DataSourceRejected(
            f"unknown data source(s) in {organization.name}: {', '.join(map(repr, missing))}",
            code="unknown_data_source",
            param="data_sources",
        )
    return sources


def _uuid_or_none(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(raw)
    except ValueError:
        return None


@dataclass(frozen=True)
class FileFilters:
    """What a list of a data source's files is narrowed to; None is "any"."""

    status: str | None = None
    kind: str | None = None
    name: str | None = None  # contained in the name, any case
    uploaded_since: datetime | None = None


def data_source_files(*, data_source: DataSource, filters: FileFilters) -> QuerySet[File]:
    """Every file revision of ``data_source`` (superseded and deleted ones too: each
    says so) that passes ``filters``; unordered, for :func:`core.pagination.page_of`."""
    files = File.objects.filter(data_source=data_source).select_related("data_source")
    if filters.status:
        files = files.filter(status=filters.status)
    if filters.kind:
        files = files.filter(kind=filters.kind)
    if filters.name:
        files = files.filter(name__icontains=filters.name)
    if filters.uploaded_since:
        files = files.filter(created_at__gte=filters.uploaded_since)
    return files
