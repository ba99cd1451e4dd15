"""Input and output shapes of the management endpoints (data sources, their files,
API keys), and the builders of the outputs; the apps' are citations.api.app_serializers.

JSON fields are strict about their types: ``"5"`` is not a number and ``1`` is not
a boolean, so a client's mistake is a 400 naming the field rather than a guess.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from core.fields import list_of
from core.roles import Role
from documents.api.serializers import JsonStringField
from documents.data_sources import MAX_NAME_CHARS
from documents.models import ApiKey, DataSource, FileStatus
from documents.sniffing import CONTENT_TYPES
from documents.storable_text import unstorable_character


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
