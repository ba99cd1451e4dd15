"""Small shapes every REST view may share: a JSON object body, the reply to a DELETE,
and the ids OpenAPI examples show."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from core.errors import ApiError

EXAMPLE_SOURCE_ID = "9b2f4c1e-7d3a-4e5b-8c6d-0a1b2c3d4e5f"
EXAMPLE_DATABASE_ID = "3c4d5e6f-1a2b-4c3d-9e8f-7a6b5c4d3e2f"
EXAMPLE_APP_ID = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"
EXAMPLE_CREATED = "2026-11-27T09:30:00Z"


def json_object(request: Request) -> Mapping[str, Any]:
    """The request's JSON body, which must be an object (a list or a string is a 400)."""
    if not isinstance(request.data, Mapping):
        raise ApiError("the body must be a JSON object", code="invalid_body")
    return request.data


class DeletedOutput(serializers.Serializer):
    id = serializers.CharField()
    object = serializers.CharField(help_text='"data_source.deleted" or "app.deleted"')
    deleted = serializers.BooleanField()


def deleted_reply(kind: str, pk: object) -> dict[str, Any]:
    """The reply to a DELETE, in the shape OpenAI's APIs give."""
    return {"id": str(pk), "object": f"{kind}.deleted", "deleted": True}
