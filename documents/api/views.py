"""File and chunk endpoints of ``/v1/flow/``: parse, call one service, shape output."""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.events import document_event_record
from core.caller import Caller
from core.errors import ApiError, error_responses
from core.tenancy import member_organization
from documents import ingestion, selectors
from documents.api.parsers import RawNameMultiPartParser
from documents.api.serializers import (
    ChunkOutput,
    FileCancelInput,
    FileDeleteInput,
    FileMarkdownOutput,
    FileOutput,
    FileUploadInput,
    FileUploadOutput,
    chunk_output,
    file_markdown_output,
    file_output,
    file_upload_output,
)
from documents.downloads import original_download
from documents.models import FileStatus
from documents.uploads import data_source_for, file_upload


class FileUploadView(APIView):
    """Upload a file into a data source; ingestion continues in the background."""

    parser_classes = [RawNameMultiPartParser]

    @extend_schema(
        request={"multipart/form-data": FileUploadInput},
        responses={
            202: FileUploadOutput,
            200: OpenApiResponse(FileUploadOutput, description="the same bytes are already there"),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        form = FileUploadInput(data=request.data)
        form.is_valid(raise_exception=True)
        upload, caller = form.validated_data["file"], Caller.from_request(request)
        source = data_source_for(
            organization=caller.member_organization, name=form.validated_data["data_source"]
        )
        result = file_upload(
            data_source=source,
            name=upload.name,
            stream=upload,
            uploaded_by=caller.user,
            api_key=caller.api_key,
            origin=caller.origin,
        )
        body = file_upload_output(result, request)
        code = status.HTTP_200_OK if result.duplicate else status.HTTP_202_ACCEPTED
        return Response(body, status=code, headers={"Location": body["status_url"]})


class FileDetailView(APIView):
    """Metadata, stage and progress of one file revision."""

    @extend_schema(responses={200: FileOutput, **error_responses(404)})
    def get(self, request: Request, file_id: str) -> Response:
        record = selectors.file_get(organization=member_organization(request), file_id=file_id)
        return Response(file_output(record, request))

    @extend_schema(
        request=FileDeleteInput,
        responses={200: FileOutput, **error_responses(400, 404, 409, 415)},
    )
    def delete(self, request: Request, file_id: str) -> Response:
        """Hide the document from retrieval (all revisions); evidence and bytes stay."""
        caller = Caller.from_request(request)
        record = selectors.file_get(organization=caller.member_organization, file_id=file_id)
        reason = FileDeleteInput.reason_from(request.data)
        try:
            ingestion.file_delete(
                file=record,
                reason=reason,
                user=caller.user,
                api_key=caller.api_key,
                origin=caller.origin,
            )
        except ingestion.AlreadyDeleted as exc:
            raise ApiError(str(exc), code="already_deleted", status_code=409) from exc
        record.refresh_from_db()
        return Response(file_output(record, request))


class FileCancelView(APIView):
    """Stop the ingestion of a file that is not ready yet; it can be retried later."""

    @extend_schema(
        request=FileCancelInput,
        responses={200: FileOutput, **error_responses(400, 404, 409, 415)},
    )
    def post(self, request: Request, file_id: str) -> Response:
        """The file ends ``failed`` with "cancelled by …" (a file being converted again:
        ``ready`` on its previous conversion); 409 when it is not being ingested."""
        caller = Caller.from_request(request)
        record = selectors.file_get(organization=caller.member_organization, file_id=file_id)
        reason = FileCancelInput.reason_from(request.data)
        try:
            ingestion.file_cancel(
                file=record,
                user=caller.user,
                api_key=caller.api_key,
                origin=caller.origin,
                reason=reason,
            )
        except ingestion.NotCancellable as exc:
            raise ApiError(str(exc), code="not_in_progress", status_code=409) from exc
        record.refresh_from_db()
        return Response(file_output(record, request))


class FileContentView(APIView):
    """The original uploaded bytes, byte for byte."""

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="the original bytes, byte for byte"
            ),
            **error_responses(404),
        }
    )
    def get(self, request: Request, file_id: str) -> FileResponse:
        caller = Caller.from_request(request)
        record = selectors.file_get(organization=caller.member_organization, file_id=file_id)
        document_event_record(
            kind="download",
            file=record,
            user=caller.user,
            api_key=caller.api_key,
            origin=caller.origin,
        )
        return original_download(record)


class FileMarkdownView(APIView):
    """The ingested Markdown of the file revision, with its converter and chunk ids."""

    @extend_schema(responses={200: FileMarkdownOutput, **error_responses(404, 409)})
    def get(self, request: Request, file_id: str) -> Response:
        record = selectors.file_get(organization=member_organization(request), file_id=file_id)
        markdown = selectors.markdown_active(file=record)
        if markdown is None and record.status == FileStatus.FAILED:
            raise ApiError(
                f"the file has no Markdown: its ingestion failed ({record.error_message})",
                code="ingestion_failed",
                status_code=409,
            )
        if markdown is None:
            raise ApiError(
                f"the file is not ingested yet (status: {record.status})",
                code="not_ready",
                status_code=409,
            )
        chunk_ids = selectors.chunk_ids_of(markdown=markdown)
        return Response(file_markdown_output(record, markdown, chunk_ids))


class ChunkDetailView(APIView):
    """A chunk's full provenance: file id, text and Markdown locations."""

    @extend_schema(responses={200: ChunkOutput, **error_responses(404)})
    def get(self, request: Request, database_id: str, chunk_id: str) -> Response:
        chunk = selectors.chunk_get(
            organization=member_organization(request), database_id=database_id, chunk_id=chunk_id
        )
        return Response(chunk_output(chunk))
