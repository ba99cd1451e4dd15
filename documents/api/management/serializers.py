"""Input and output shapes of the management endpoints (data sources, their files,
apps, API keys), and the builders of the outputs.

JSON fields are strict about their types: ``"5"`` is not a number and ``1`` is not
a boolean, so a client's mistake is a 400 naming the field rather than a guess.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from citations.llm_apps import RETRIEVAL_BOUNDS
from citations.models import App, Reasoning
from core.roles import Role
from documents.api.serializers import JsonStringField
from documents.data_sources import MAX_NAME_CHARS
from documents.models import ApiKey, DataSource, FileStatus
from documents.sniffing import CONTENT_TYPES
from documents.storable_text import unstorable_character

MAX_PROMPT_CHARS = 20_000  # a system prompt is instructions, not a document
MAX_REFS = 100  # data sources one app reads from


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer and nothing else (DRF's takes ``"5"`` and ``true``)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number and nothing else."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` and nothing else."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


def list_of(
    item: type[serializers.Serializer], name: str, *, paged: bool = False
) -> type[serializers.Serializer]:
    """The shape of a list of ``item``s; a ``paged`` one has OpenAI's cursor fields."""
    fields: dict[str, Any] = {
        "object": serializers.CharField(help_text='"list"'),
        "data": item(many=True),
        "__doc__": f"A list of {item.__name__}s.",
    }
    if paged:
        fields |= {
            "first_id": serializers.CharField(allow_null=True),
            "last_id": serializers.CharField(allow_null=True),
            "has_more": serializers.BooleanField(),
        }
    return type(name, (serializers.Serializer,), fields)


def _name_field(**kwargs: Any) -> JsonStringField:
    return JsonStringField(min_length=1, max_length=MAX_NAME_CHARS, **kwargs)


# data sources


class DataSourceInput(serializers.Serializer):
    """A new data source, or a data source's new name."""

    name = _name_field(help_text="unique in the organization")


class DataSourceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    object = serializers.CharField(help_text='"data_source"')
    name = serializers.CharField()
    database_id = serializers.UUIDField(help_text="the vector database it is indexed in")
    file_count = serializers.IntegerField(help_text="file revisions, deleted ones included")
    created_at = serializers.DateTimeField()
    files_url = serializers.URLField()


DataSourceList = list_of(DataSourceOutput, "DataSourceList")


def data_source_output(source: DataSource, absolute: Any) -> dict[str, Any]:
    """``absolute`` makes a path an absolute URL (``request.build_absolute_uri``)."""
    return {
        "id": str(source.pk),
        "object": "data_source",
        "name": source.name,
        "database_id": str(source.vector_database_id),
        "file_count": (
            source.file_count if hasattr(source, "file_count") else source.files.count()
        ),
        "created_at": source.created_at,
        "files_url": absolute(reverse("data-source-files", args=[source.pk])),
    }


class FileListQuery(serializers.Serializer):
    """The filters of a data source's file list (with ``core.pagination``'s parameters)."""

    status = serializers.ChoiceField(choices=FileStatus.values, required=False)
    kind = serializers.ChoiceField(choices=sorted(CONTENT_TYPES), required=False)
    name = serializers.CharField(
        required=False, max_length=255, help_text="contained in the file name, any case"
    )
    uploaded_since = serializers.DateTimeField(
        required=False,
        help_text="ISO 8601 (2026-01-31T00:00:00Z; UTC without an offset): revisions "
        "uploaded at or after it",
    )

    def validate_name(self, value: str) -> str:
        problem = unstorable_character(value)
        if problem:
            raise serializers.ValidationError(f"contains {problem}")
        return value


# apps


class AppSettingsInput(serializers.Serializer):
    """The settings an app is created with or changed to; all optional."""

    is_public = StrictBooleanField(required=False, help_text="public apps need no API key")
    generator = serializers.ChoiceField(choices=App.Generator.values, required=False)
    model = JsonStringField(
        required=False, allow_blank=True, max_length=200, help_text="an LLM generator's model"
    )
    prompt = JsonStringField(
        required=False,
        allow_blank=True,
        max_length=MAX_PROMPT_CHARS,
        trim_whitespace=False,
        help_text="system prompt of an LLM generator",
    )
    temperature = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=2)
    max_output_tokens = StrictIntegerField(required=False, min_value=1, max_value=200_000)
    reasoning = serializers.ChoiceField(choices=Reasoning.values, required=False)
    top_k = StrictIntegerField(required=False, min_value=1, max_value=100)
    candidate_k = StrictIntegerField(required=False, min_value=1, max_value=1000)
    min_score = StrictFloatField(required=False, min_value=0, max_value=1)
    answer_threshold = StrictFloatField(required=False, min_value=0, max_value=1)
    max_answer_sentences = StrictIntegerField(required=False, min_value=1, max_value=50)

    @staticmethod
    def retrieval_of(settings: dict[str, Any]) -> dict[str, Any]:
        return {key: settings.pop(key) for key in list(settings) if key in RETRIEVAL_BOUNDS}


class AppChangeInput(AppSettingsInput):
    name = _name_field(required=False)
    data_sources = serializers.ListField(
        child=JsonStringField(min_length=1, max_length=MAX_NAME_CHARS),
        min_length=1,
        max_length=MAX_REFS,
        required=False,
        help_text="data sources by id or by name",
    )


class AppCreateInput(AppChangeInput):
    name = _name_field()
    data_sources = serializers.ListField(
        child=JsonStringField(min_length=1, max_length=MAX_NAME_CHARS),
        min_length=1,
        max_length=MAX_REFS,
        help_text="data sources by id or by name",
    )


class AppDataSourceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class AppOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="the llm_app_id of /semantics/apps/{llm_app_id}/…")
    object = serializers.CharField(help_text='"app"')
    name = serializers.CharField()
    data_sources = AppDataSourceOutput(many=True)
    is_public = serializers.BooleanField()
    generator = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    prompt = serializers.CharField(allow_blank=True)
    temperature = serializers.FloatField(allow_null=True)
    max_output_tokens = serializers.IntegerField()
    reasoning = serializers.CharField()
    top_k = serializers.IntegerField()
    candidate_k = serializers.IntegerField()
    min_score = serializers.FloatField()
    answer_threshold = serializers.FloatField()
    max_answer_sentences = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    query_url = serializers.URLField(help_text="where to ask it (POST)")


AppList = list_of(AppOutput, "AppList")


def app_output(app: App, absolute: Any) -> dict[str, Any]:
    sources = sorted(app.data_sources.all(), key=lambda s: (s.name, str(s.pk)))
    return {
        "id": str(app.pk),
        "object": "app",
        "name": app.name,
        "data_sources": [{"id": str(s.pk), "name": s.name} for s in sources],
        "is_public": app.is_public,
        "generator": app.generator,
        "model": app.model,
        "prompt": app.prompt,
        "temperature": app.temperature,
        "max_output_tokens": app.max_output_tokens,
        "reasoning": app.reasoning,
        "top_k": app.top_k,
        "candidate_k": app.candidate_k,
        "min_score": app.min_score,
        "answer_threshold": app.answer_threshold,
        "max_answer_sentences": app.max_answer_sentences,
        "created_at": app.created_at,
        "query_url": absolute(reverse("query-executions", args=[app.pk])),
    }


# API keys


class ApiKeyCreateInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices, help_text="what the key may do")
    name = JsonStringField(
        required=False, allow_blank=True, max_length=200, help_text="a label for people"
    )


class ApiKeyOutput(serializers.Serializer):
    id = serializers.IntegerField()
    object = serializers.CharField(help_text='"api_key"')
    prefix = serializers.CharField(help_text="the public part: the key starts pvk_<prefix>_")
    name = serializers.CharField(allow_blank=True)
    role = serializers.ChoiceField(choices=Role.choices)
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="to the minute")
    revoked_at = serializers.DateTimeField(allow_null=True)


class ApiKeyCreatedOutput(ApiKeyOutput):
    key = serializers.CharField(help_text="the secret: shown in this answer only, never again")


ApiKeyList = list_of(ApiKeyOutput, "ApiKeyList")


def api_key_output(key: ApiKey) -> dict[str, Any]:
    """A key as listed: never its hash, never its secret."""
    return {
        "id": key.pk,
        "object": "api_key",
        "prefix": key.prefix,
        "name": key.name,
        "role": key.role,
        "created_at": key.created_at,
        "last_used_at": key.last_used_at,
        "revoked_at": key.revoked_at,
    }
