"""Apps (``llm_app_id``): creating, changing and deleting them, reading an
organization's, and deciding who may query them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import ProtectedError, QuerySet

from citations.models import MAX_MODEL_SECONDS, App, ModelContract, ModelFallback, Reasoning
from core.exceptions import DomainRejected
from documents.models import DataSource, Organization


class AppError(DomainRejected):
    """An app cannot be created or changed as asked; the message says why."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid_app",
        status: int = 400,
        param: str | None = None,
    ) -> None:
        super().__init__(message, code=code, status=status, param=param)


# the retrieval settings an app may change, with the bounds a search can work with
RETRIEVAL_BOUNDS: dict[str, tuple[float, float]] = {
    "top_k": (1, 100),
    "candidate_k": (1, 1000),
    "min_score": (0.0, 1.0),
    "answer_threshold": (0.0, 1.0),
    "max_answer_sentences": (1, 50),
}
# settings whose null means "as fitted": the answer scorer's own abstention threshold
NULLABLE_RETRIEVAL = frozenset({"answer_threshold"})
# how an app's model is talked to: the contract form, what happens when it fails, and
# its time limits (seconds; None = the environment's PROVENANCE_LLM_*_SECONDS)
MODEL_SETTINGS = (
    "model_contract",
    "model_fallback",
    "model_connect_seconds",
    "model_first_token_seconds",
    "model_timeout_seconds",
)
MODEL_SECONDS = ("model_connect_seconds", "model_first_token_seconds", "model_timeout_seconds")
# every setting of an app that app_update changes (its name and data sources aside)
APP_SETTINGS = (
    "is_public",
    "generator",
    "model",
    "prompt",
    "temperature",
    "max_output_tokens",
    "reasoning",
    *MODEL_SETTINGS,
    *RETRIEVAL_BOUNDS,
)


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
    retrieval: Mapping[str, float] | None = None,
    model_settings: Mapping[str, Any] | None = None,
) -> App:
    """A new app over the data sources named; ``retrieval`` overrides the defaults
    of :data:`RETRIEVAL_BOUNDS`' settings, ``model_settings`` those of :data:`MODEL_SETTINGS`."""
    _generator_check(generator, model, temperature, max_output_tokens)
    _reasoning_check(reasoning)
    _model_settings_check(model_settings or {})
    _retrieval_check(retrieval or {})
    if App.objects.filter(organization=organization, name=name).exists():
        raise _name_taken(organization, name)
    sources = list(DataSource.objects.filter(organization=organization, name__in=data_source_names))
    missing = sorted(set(data_source_names) - {s.name for s in sources})
    if missing:
        raise AppError(
            f"unknown data source(s) in {organization.name}: {', '.join(missing)}",
            code="unknown_data_source",
            param="data_sources",
        )
    if not sources:
        raise AppError("an app needs at least one data source", param="data_sources")
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
        **(retrieval or {}),
        **(model_settings or {}),
    )
    app.data_sources.set(sources)
    return app


def _name_taken(organization: Organization, name: str) -> AppError:
    return AppError(
        f"an app named {name!r} already exists in {organization.name}",
        code="app_exists",
        status=409,
        param="name",
    )


def _reasoning_check(reasoning: str) -> None:
    if reasoning not in Reasoning.values:
        raise AppError(
            f"unknown reasoning {reasoning!r}: use {', '.join(Reasoning.values)}",
            param="reasoning",
        )


def _model_settings_check(values: Mapping[str, Any]) -> None:
    for setting in values:
        if setting not in MODEL_SETTINGS:
            raise AppError(f"unknown model setting {setting!r}", param=setting)
    contract = values.get("model_contract", ModelContract.AUTO)
    if contract not in ModelContract.values:
        raise AppError(
            f"unknown model_contract {contract!r}: use {', '.join(ModelContract.values)}",
            param="model_contract",
        )
    fallback = values.get("model_fallback", ModelFallback.EXTRACTIVE)
    if fallback not in ModelFallback.values:
        raise AppError(
            f"unknown model_fallback {fallback!r}: use {', '.join(ModelFallback.values)}",
            param="model_fallback",
        )
    for setting in MODEL_SECONDS:
        seconds = values.get(setting)
        if seconds is not None and not (
            isinstance(seconds, int) and 1 <= seconds <= MAX_MODEL_SECONDS
        ):
            raise AppError(
                f"{setting} must be a whole number of seconds from 1 to {MAX_MODEL_SECONDS}, "
                "or null for the environment's",
                param=setting,
            )


def _retrieval_check(retrieval: Mapping[str, float]) -> None:
    for setting, value in retrieval.items():
        if setting not in RETRIEVAL_BOUNDS:
            raise AppError(f"unknown retrieval setting {setting!r}", param=setting)
        low, high = RETRIEVAL_BOUNDS[setting]
        if value is None and setting in NULLABLE_RETRIEVAL:
            continue
        if value is None or not low <= value <= high:
            raise AppError(f"{setting} must be between {low} and {high}", param=setting)


@transaction.atomic
def app_update(
    *,
    app: App,
    name: str | None = None,
    data_sources: Sequence[DataSource] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> App:
    """Change an app's name, data sources and :data:`APP_SETTINGS`; the answers it
    gave keep the settings they were given with (each records its own)."""
    changes = dict(settings or {})
    unknown = sorted(set(changes) - set(APP_SETTINGS))
    if unknown:
        raise AppError(f"unknown setting(s): {', '.join(unknown)}", param=unknown[0])
    merged = {field: getattr(app, field) for field in APP_SETTINGS} | changes
    _generator_check(
        merged["generator"], merged["model"], merged["temperature"], merged["max_output_tokens"]
    )
    _reasoning_check(merged["reasoning"])
    _model_settings_check({key: merged[key] for key in MODEL_SETTINGS})
    _retrieval_check({key: merged[key] for key in RETRIEVAL_BOUNDS})
    if name is not None and name != app.name:
        if App.objects.filter(organization_id=app.organization_id, name=name).exists():
            raise _name_taken(app.organization, name)
        changes["name"] = name
    if data_sources is not None:
        if not data_sources:
            raise AppError("an app needs at least one data source", param="data_sources")
        app.data_sources.set(data_sources)
    for field, value in changes.items():
        setattr(app, field, value)
    if changes:
        app.save(update_fields=list(changes))
    return app


@transaction.atomic
def app_delete(*, app: App) -> None:
    """Delete an app that never answered. An app's answers are evidence and are
    never deleted, so an app that has any is refused (409 ``app_has_answers``):
    make it answer nobody instead by changing its settings, or keep it."""
    answers = app.query_executions.count()
    if answers:
        raise AppError(
            f"the app {app.name!r} has {answers} answer(s), which are evidence and stay: "
            "an app that answered cannot be deleted",
            code="app_has_answers",
            status=409,
            param="app_id",
        )
    try:
        app.delete()
    except ProtectedError as exc:  # threads, responses or evaluations that name it
        raise AppError(
            f"the app {app.name!r} is named by recorded threads, responses or evaluations, "
            "which stay: it cannot be deleted",
            code="app_has_answers",
            status=409,
            param="app_id",
        ) from exc


def apps_of(*, organization: Organization) -> QuerySet[App]:
    """The organization's apps by name, with their data sources in one more query."""
    return (
        App.objects.filter(organization=organization)
        .prefetch_related("data_sources")
        .order_by("name", "id")
    )


def app_get(*, organization: Organization, app_id: str) -> App:
    """The organization's app ``app_id`` (a public app of another one is not found)."""
    app = app_find(app_id=app_id)
    if app is None or app.organization_id != organization.pk:
        raise AppError(
            f"No app found with id '{app_id}'.", code="not_found", status=404, param="app_id"
        )
    return apps_of(organization=organization).get(pk=app.pk)


def _generator_check(
    generator: str, model: str, temperature: float | None, max_output_tokens: int | None
) -> None:
    """A model generator needs a model; the numbers must be ones a provider accepts."""
    if generator not in App.Generator.values:
        raise AppError(
            f"unknown generator {generator!r}: use {', '.join(App.Generator.values)}",
            param="generator",
        )
    if generator != App.Generator.EXTRACTIVE and not model.strip():
        raise AppError(f"the {generator} generator needs a model (--model)", param="model")
    if temperature is not None and not 0 <= temperature <= 2:
        raise AppError("the temperature must be between 0 and 2", param="temperature")
    if max_output_tokens is not None and not 1 <= max_output_tokens <= 200_000:
        raise AppError("max output tokens must be between 1 and 200000", param="max_output_tokens")


def app_find(*, app_id: str) -> App | None:
    try:
        key = uuid.UUID(str(app_id))
    except ValueError:
        return None
    return App.objects.select_related("organization").filter(pk=key).first()


def app_visible_to(*, app: App, organization: Organization | None) -> bool:
    """Public apps answer anyone; private ones only their own organization."""
    return app.is_public or (organization is not None and organization.pk == app.organization_id)
