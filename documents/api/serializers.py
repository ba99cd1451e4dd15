"""Input and output shapes of the document endpoints, and the builders of the outputs."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from core.errors import ApiError
from documents.ingestion.delete import MAX_REASON_CHARS
from documents.models import Chunk, DocumentMarkdown, File, FileStatus, Location
from documents.uploads import UploadResult


@extend_schema_field(OpenApiTypes.BINARY)
class UploadedFileField(serializers.FileField):
    """The uploaded bytes; described as ``format: binary`` so generated clients send a
    file part (drf-spectacular would otherwise say a plain string)."""


class FileUploadInput(serializers.Serializer):
    file = UploadedFileField(allow_empty_file=True, use_url=False)
    data_source = serializers.CharField(max_length=200)


class JsonStringField(serializers.CharField):
    """A JSON string and nothing else: DRF's CharField would take ``42`` as ``"42"``."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class FileDeleteInput(serializers.Serializer):
    """A deletion's body: why the document is hidden from retrieval."""

    reason = JsonStringField(
        min_length=1, max_length=MAX_REASON_CHARS, help_text="why; kept in the document's ledger"
    )

    @classmethod
    def reason_from(cls, data: Any, query: Mapping[str, Any] | None = None) -> str:
        """The valid reason in ``data``, else in the ``?reason=`` of ``query`` (for
        clients that send no DELETE body), or an ``ApiError`` whose code says what is
        wrong (``reason_too_long``, else ``reason_required``)."""
        given = data if isinstance(data, dict) else {}
        if "reason" not in given and query is not None and "reason" in query:
            given = {"reason": query.get("reason")}
        form = cls(data=given)
        if form.is_valid():
            return form.validated_data["reason"]
        if any(error.code == "max_length" for error in form.errors.get("reason", [])):
            raise ApiError(
                f"'reason' is longer than {MAX_REASON_CHARS} characters",
                code="reason_too_long",
                param="reason",
            )
        raise ApiError("a deletion needs a 'reason'", code="reason_required", param="reason")


class FileCancelInput(serializers.Serializer):
    """A cancellation's optional body: why the ingestion is stopped."""

    reason = JsonStringField(
        required=False,
        max_length=MAX_REASON_CHARS,
        help_text="why; kept in the document's ledger (default: who cancelled)",
    )

    @classmethod
    def reason_from(cls, data: Any) -> str:
        """The reason in ``data`` ("" when none is given), or an ``ApiError``
        (``invalid_body``, ``reason_too_long``, ``invalid_reason``)."""
        if not isinstance(data, dict):
            raise ApiError("the body must be a JSON object", code="invalid_body")
        form = cls(data=data)
        if form.is_valid():
            return form.validated_data.get("reason", "")
        if any(error.code == "max_length" for error in form.errors.get("reason", [])):
            raise ApiError(
                f"'reason' is longer than {MAX_REASON_CHARS} characters",
                code="reason_too_long",
                param="reason",
            )
        raise ApiError("'reason' must be a string", code="invalid_reason", param="reason")


# The declared shapes below document the builders' dicts in the OpenAPI schema;
# tests/citations/test_openapi.py checks real responses against them, so they cannot drift.
# Their arguments (lengths, ranges, ``required``) are the model fields' own.

UINT_MAX = 2147483647  # the upper end of a PositiveIntegerField (PostgreSQL integer)


class FileMarkdownOutput(serializers.Serializer):
    """The file revision's ingested Markdown: every location indexes into it."""

    file_id = serializers.UUIDField()
    revision = serializers.IntegerField()
    database_id = serializers.UUIDField()
    converter = serializers.CharField()
    converter_version = serializers.CharField()
    markdown_sha256 = serializers.CharField()
    page_count = serializers.IntegerField(allow_null=True)
    front_matter = serializers.CharField(allow_blank=True)
    markdown = serializers.CharField(allow_blank=True)
    chunk_ids = serializers.ListField(child=serializers.UUIDField(), help_text="in order")


class FileOutput(serializers.Serializer):
    file_id = serializers.UUIDField()
    name = serializers.CharField(max_length=255)
    kind = serializers.CharField(max_length=20)
    content_type = serializers.CharField(max_length=120)
    size = serializers.BigIntegerField(min_value=-(2**63), max_value=2**63 - 1)
    sha256 = serializers.CharField(max_length=64)
    revision = serializers.IntegerField(required=False, min_value=0, max_value=UINT_MAX)
    is_current = serializers.BooleanField(
        help_text="answers are drawn from this revision: ready, not superseded, not deleted"
    )
    superseded_at = serializers.DateTimeField(allow_null=True, required=False)
    status = serializers.ChoiceField(choices=FileStatus.choices, required=False)
    stage = serializers.CharField()
    progress = serializers.DictField(read_only=True)
    error_message = serializers.CharField(allow_blank=True, required=False)
    data_source = serializers.CharField()
    data_source_id = serializers.UUIDField()
    database_id = serializers.UUIDField()
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
    ready_at = serializers.DateTimeField(allow_null=True, required=False)
    status_url = serializers.CharField(read_only=True)
    content_url = serializers.CharField(read_only=True)
    deleted_at = serializers.DateTimeField(allow_null=True, required=False)
    deletion_reason = serializers.CharField(allow_blank=True, required=False)


class FileUploadOutput(FileOutput):
    duplicate = serializers.BooleanField(
        help_text="true when the name's current revision already has these exact bytes"
    )


class LocationOutput(serializers.Serializer):
    line_number_start = serializers.IntegerField(min_value=0, max_value=UINT_MAX)
    line_number_end = serializers.IntegerField(min_value=0, max_value=UINT_MAX)
    char_start = serializers.IntegerField(min_value=0, max_value=UINT_MAX)
    char_end = serializers.IntegerField(min_value=0, max_value=UINT_MAX)
    hierarchy = serializers.JSONField(required=False)
    page_number = serializers.IntegerField(
        allow_null=True, required=False, min_value=0, max_value=UINT_MAX
    )
    boxes = serializers.JSONField(required=False)


class ChunkOutput(serializers.Serializer):
    chunk_id = serializers.UUIDField()
    file_id = serializers.UUIDField()
    database_id = serializers.UUIDField()
    chunk_text = serializers.CharField()
    locations = LocationOutput(many=True)
    position = serializers.IntegerField(min_value=0, max_value=UINT_MAX)
    section = serializers.CharField(allow_blank=True, required=False)
    token_count = serializers.IntegerField(min_value=0, max_value=UINT_MAX)
    content_hash = serializers.CharField(max_length=64)


def _absolute(request: Request, name: str, *args: object) -> str:
    """Absolute like every other URL the API returns."""
    return request.build_absolute_uri(reverse(name, args=args))


def file_output(record: File, request: Request) -> dict[str, Any]:
    """One file revision: metadata, stage, progress and where to follow it."""
    return {
        "file_id": str(record.pk),
        "name": record.name,
        "kind": record.kind,
        "content_type": record.content_type,
        "size": record.size,
        "sha256": record.sha256,
        "revision": record.revision,
        "is_current": record.is_current,
        "superseded_at": record.superseded_at,
        "status": record.status,
        "stage": record.status,
        "progress": {"done": record.progress_done, "total": record.progress_total},
        "error_message": record.error_message,
        "data_source": record.data_source.name,
        "data_source_id": str(record.data_source_id),
        "database_id": str(record.data_source.vector_database_id),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "ready_at": record.ready_at,
        "status_url": _absolute(request, "file-detail", record.pk),
        "content_url": _absolute(request, "file-content", record.pk),
        "deleted_at": record.deleted_at,
        "deletion_reason": record.deletion_reason,
    }


def file_upload_output(result: UploadResult, request: Request) -> dict[str, Any]:
    """The uploaded (or already present) revision, and whether it was already there."""
    return file_output(result.file, request) | {"duplicate": result.duplicate}


def file_markdown_output(
    record: File, markdown: DocumentMarkdown, chunk_ids: list[uuid.UUID]
) -> dict[str, Any]:
    return {
        "file_id": str(record.pk),
        "revision": record.revision,
        "database_id": str(record.data_source.vector_database_id),
        "converter": markdown.converter,
        "converter_version": markdown.converter_version,
        "markdown_sha256": markdown.sha256,
        "page_count": markdown.page_count,
        "front_matter": markdown.front_matter,
        "markdown": markdown.markdown,
        "chunk_ids": [str(pk) for pk in chunk_ids],
    }


def _location_output(location: Location) -> dict[str, Any]:
    return {
        "line_number_start": location.line_number_start,
        "line_number_end": location.line_number_end,
        "char_start": location.char_start,
        "char_end": location.char_end,
        "hierarchy": location.hierarchy,
        "page_number": location.page_number,
        "boxes": location.boxes,
    }


def chunk_output(chunk: Chunk) -> dict[str, Any]:
    """A chunk's provenance: its file, text and Markdown locations (in their order)."""
    return {
        "chunk_id": str(chunk.pk),
        "file_id": str(chunk.file_id),
        "database_id": str(chunk.vector_database_id),
        "chunk_text": chunk.chunk_text,
        "locations": [_location_output(location) for location in chunk.locations.all()],
        "position": chunk.position,
        "section": chunk.section,
        "token_count": chunk.token_count,
        "content_hash": chunk.content_hash,
    }
