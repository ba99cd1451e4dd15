"""Input and output shapes of the document endpoints."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from documents.api.errors import ApiError
from documents.models import Chunk, File, Location


@extend_schema_field(OpenApiTypes.BINARY)
class UploadedFileField(serializers.FileField):
    """The uploaded bytes; described as ``format: binary`` so generated clients send a
    file part (drf-spectacular would otherwise say a plain string)."""


class FileUploadInput(serializers.Serializer):
    file = UploadedFileField(allow_empty_file=True, use_url=False)
    data_source = serializers.CharField(max_length=200)


MAX_REASON_CHARS = 2000  # a deletion's reason is a sentence or two, kept in the ledger


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
    def reason_from(cls, data: Any) -> str:
        """The valid reason in ``data``, or an ``ApiError`` whose code says what is wrong
        (``reason_too_long``, else ``reason_required``)."""
        form = cls(data=data if isinstance(data, dict) else {})
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


class FileOutput(serializers.ModelSerializer):
    file_id = serializers.UUIDField(source="id")
    data_source = serializers.CharField(source="data_source.name")
    data_source_id = serializers.UUIDField()
    database_id = serializers.UUIDField(source="data_source.vector_database_id")
    stage = serializers.CharField(source="status")
    progress = serializers.SerializerMethodField()
    is_current = serializers.BooleanField(
        help_text="answers are drawn from this revision: ready, not superseded, not deleted"
    )
    status_url = serializers.SerializerMethodField()
    content_url = serializers.SerializerMethodField()

    class Meta:
        model = File
        fields = [
            "file_id",
            "name",
            "kind",
            "content_type",
            "size",
            "sha256",
            "revision",
            "is_current",
            "superseded_at",
            "status",
            "stage",
            "progress",
            "error_message",
            "data_source",
            "data_source_id",
            "database_id",
            "created_at",
            "updated_at",
            "ready_at",
            "status_url",
            "content_url",
            "deleted_at",
            "deletion_reason",
        ]

    def get_progress(self, obj: File) -> dict:
        return {"done": obj.progress_done, "total": obj.progress_total}

    def get_status_url(self, obj: File) -> str:
        return self._absolute(reverse("file-detail", args=[obj.pk]))

    def get_content_url(self, obj: File) -> str:
        return self._absolute(reverse("file-content", args=[obj.pk]))

    def _absolute(self, path: str) -> str:
        """Absolute like every other URL the API returns, when serving a request."""
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class FileUploadOutput(FileOutput):
    duplicate = serializers.BooleanField(
        help_text="true when the name's current revision already has these exact bytes"
    )

    class Meta(FileOutput.Meta):
        fields = [*FileOutput.Meta.fields, "duplicate"]


class LocationOutput(serializers.ModelSerializer):
    class Meta:
        model = Location
        fields = [
            "line_number_start",
            "line_number_end",
            "char_start",
            "char_end",
            "hierarchy",
            "page_number",
            "boxes",
        ]


class ChunkOutput(serializers.ModelSerializer):
    chunk_id = serializers.UUIDField(source="id")
    file_id = serializers.UUIDField()
    database_id = serializers.UUIDField(source="vector_database_id")
    locations = LocationOutput(many=True)

    class Meta:
        model = Chunk
        fields = [
            "chunk_id",
            "file_id",
            "database_id",
            "chunk_text",
            "locations",
            "position",
            "section",
            "token_count",
            "content_hash",
        ]
