"""Creating apps (``llm_app_id``) and deciding who may query them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction

from citations.models import App
from documents.models import DataSource, Organization


class AppError(Exception):
    """An app cannot be created as asked; the message says why."""


@transaction.atomic
def app_create(
    *,
    organization: Organization,
    name: str,
    data_source_names: Sequence[str],
    is_public: bool = False,
) -> App:
    if App.objects.filter(organization=organization, name=name).exists():
        raise AppError(f"an app named {name!r} already exists in {organization.name}")
    sources = list(DataSource.objects.filter(organization=organization, name__in=data_source_names))
    missing = sorted(set(data_source_names) - {s.name for s in sources})
    if missing:
        raise AppError(f"unknown data source(s) in {organization.name}: {', '.join(missing)}")
    if not sources:
        raise AppError("an app needs at least one data source")
    app = App.objects.create(organization=organization, name=name, is_public=is_public)
    app.data_sources.set(sources)
    return app


def app_find(*, app_id: str) -> App | None:
    try:
        key = uuid.UUID(str(app_id))
    except ValueError:
        return None
    return App.objects.select_related("organization").filter(pk=key).first()


def app_visible_to(*, app: App, organization: Organization | None) -> bool:
    """Public apps answer anyone; private ones only their own organization."""
    return app.is_public or (organization is not None and organization.pk == app.organization_id)
