"""Creating apps (``llm_app_id``) and deciding who may query them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction

from citations.models import App, Reasoning
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
    generator: str = App.Generator.EXTRACTIVE,
    model: str = "",
    prompt: str = "",
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    reasoning: str = Reasoning.SINGLE,
) -> App:
    _generator_check(generator, model, temperature, max_output_tokens)
    if reasoning not in Reasoning.values:
        raise AppError(f"unknown reasoning {reasoning!r}: use {', '.join(Reasoning.values)}")
    if App.objects.filter(organization=organization, name=name).exists():
        raise AppError(f"an app named {name!r} already exists in {organization.name}")
    sources = list(DataSource.objects.filter(organization=organization, name__in=data_source_names))
    missing = sorted(set(data_source_names) - {s.name for s in sources})
    if missing:
        raise AppError(f"unknown data source(s) in {organization.name}: {', '.join(missing)}")
    if not sources:
        raise AppError("an app needs at least one data source")
    app = App.objects.create(
        organization=organization,
        name=name,
        is_public=is_public,
        generator=generator,
        model=model,
        prompt=prompt,
        temperature=temperature,
        reasoning=reasoning,
        **({"max_output_tokens": max_output_tokens} if max_output_tokens else {}),
    )
    app.data_sources.set(sources)
    return app


def _generator_check(
    generator: str, model: str, temperature: float | None, max_output_tokens: int | None
) -> None:
    """A model generator needs a model; the numbers must be ones a provider accepts."""
    if generator not in App.Generator.values:
        raise AppError(f"unknown generator {generator!r}: use {', '.join(App.Generator.values)}")
    if generator != App.Generator.EXTRACTIVE and not model.strip():
        raise AppError(f"the {generator} generator needs a model (--model)")
    if temperature is not None and not 0 <= temperature <= 2:
        raise AppError("the temperature must be between 0 and 2")
    if max_output_tokens is not None and not 1 <= max_output_tokens <= 200_000:
        raise AppError("max output tokens must be between 1 and 200000")


def app_find(*, app_id: str) -> App | None:
    try:
        key = uuid.UUID(str(app_id))
    except ValueError:
        return None
    return App.objects.select_related("organization").filter(pk=key).first()


def app_visible_to(*, app: App, organization: Organization | None) -> bool:
    """Public apps answer anyone; private ones only their own organization."""
    return app.is_public or (organization is not None and organization.pk == app.organization_id)
