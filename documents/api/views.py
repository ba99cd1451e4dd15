"""File and chunk endpoints of ``/v1/flow/``: parse, call one service, shape output."""

from __future__ import annotations

from typing import ClassVar

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.events import document_event_record
from core.caller import Caller
from core.errors import ApiError, error_responses
from core.roles import Action
from core.tenancy import member_organization
from documents import selectors
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
from documents.ingestion.cancel import NotCancellable, file_cancel
from documents.ingestion.delete import AlreadyDeleted, file_delete
from documents.models import FileStatus
from documents.sniffing import CONTENT_TYPES
from documents.uploads import data_source_for, file_upload


class FileUploadView(APIView):
    """Upload a file into a data source; ingestion continues in the background."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.EDIT_DOCUMENTS}

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
            user_agent=caller.user_agent,
        )
        body = file_upload_output(result, request)
        code = status.HTTP_200_OK if result.duplicate else status.HTTP_202_ACCEPTED
        return Response(body, status=code, headers={"Location": body["status_url"]})


class FileDetailView(APIView):
    """Metadata, stage and progress of one file revision."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.READ_DOCUMENTS,
        "DELETE": Action.EDIT_DOCUMENTS,
    }

    @extend_schema(responses={200: FileOutput, **error_responses(404)})
    def get(self, request: Request, file_id: str) -> Response:
        record = selectors.file_get(organization=member_organization(request), file_id=file_id)
        return Response(file_output(record, request))

    @extend_schema(
        request=FileDeleteInput,
        parameters=[
            OpenApiParameter(
                "reason",
                str,
                description="for a client that cannot send a DELETE body: the body's "
                "`reason` (the body wins when both are sent)",
            )
        ],
        responses={200: FileOutput, **error_responses(400, 404, 409, 415)},
    )
    def delete(self, request: Request, file_id: str) -> Response:
        """Hide the document from retrieval (all revisions); evidence and bytes stay."""
        caller = Caller.from_request(request)
        record = selectors.file_get(organization=caller.member_organization, file_id=file_id)
        reason = FileDeleteInput.reason_from(request.data, request.query_params)
        try:
            file_delete(
                file=record,
                reason=reason,
                user=caller.user,
                api_key=caller.api_key,
                origin=caller.origin,
                user_agent=caller.user_agent,
            )
        except AlreadyDeleted as exc:
            raise ApiError(str(exc), code="already_deleted", status_code=409) from exc
        record.refresh_from_db()
        return Response(file_output(record, request))


class FileCancelView(APIView):
    """Stop the ingestion of a file that is not ready yet; it can be retried later."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.EDIT_DOCUMENTS}

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
            file_cancel(
                file=record,
                user=caller.user,
                api_key=caller.api_key,
                origin=caller.origin,
                user_agent=caller.user_agent,
                reason=reason,
            )
        except NotCancellable as exc:
            raise ApiError(str(exc), code="not_in_progress", status_code=409) from exc
        record.refresh_from_db()
        return Response(file_output(record, request))


# what a download is served as: every type an upload is sniffed as, without parameters
ORIGINAL_MEDIA_TYPES = sorted({value.split(";")[0] for value in CONTENT_TYPES.values()})


class FileContentView(APIView):
    """The original uploaded bytes, byte for byte."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.READ_DOCUMENTS}

    @extend_schema(
        responses={
            **{
                (200, media_type): OpenApiResponse(
                    OpenApiTypes.BINARY,
                    description="the original bytes, byte for byte, with the file's own "
                    "type (sniffed at upload)",
                )
                for media_type in ORIGINAL_MEDIA_TYPES
            },
            **error_responses(404, 409),
        },
        parameters=[
            OpenApiParameter(
                "X-Content-SHA256",
                str,
                OpenApiParameter.HEADER,
                response=[200],
                description="the sha256 of the bytes (hex), the file's `sha256`",
            ),
            OpenApiParameter(
                "Content-Disposition",
                str,
                OpenApiParameter.HEADER,
                response=[200],
                description="`attachment` with the file's name (RFC 6266)",
            ),
        ],
    )
    def get(self, request: Request, file_id: str) -> StreamingHttpResponse:
        caller = Caller.from_request(request)
        record = selectors.file_get(organization=caller.member_organization, file_id=file_id)
        document_event_record(
            kind="download",
            file=record,
            user=caller.user,
            api_key=caller.api_key,
            origin=caller.origin,
            user_agent=caller.user_agent,
        )
        return original_download(record, where="a REST download")


class FileMarkdownView(APIView):
    """The ingested Markdown of the file revision, with its converter and chunk ids."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.READ_DOCUMENTS}

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

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.READ_DOCUMENTS}

    @extend_schema(responses={200: ChunkOutput, **error_responses(404)})
    def get(self, request: Request, database_id: str, chunk_id: str) -> Response:
        chunk = selectors.chunk_get(
            organization=member_organization(request), database_id=database_id, chunk_id=chunk_id
        )
        return Response(chunk_output(chunk))
