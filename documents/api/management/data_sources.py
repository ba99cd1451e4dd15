"""``/v1/flow/data-sources``: a data source read, created, renamed, deleted while
empty, and its files listed."""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_shapes import (
    EXAMPLE_CREATED,
    EXAMPLE_DATABASE_ID,
    EXAMPLE_SOURCE_ID,
    DeletedOutput,
    deleted_reply,
    json_object,
)
from core.errors import error_responses
from core.pagination import LIST_PARAMETERS, list_output, list_params, page_of
from core.roles import Action
from core.tenancy import member_organization
from documents import data_sources
from documents.api.management.serializers import (
    DataSourceInput,
    DataSourceList,
    DataSourceOutput,
    FileListQuery,
    data_source_output,
    list_of,
)
from documents.api.serializers import FileOutput, file_output

_SOURCE_EXAMPLE = {
    "id": EXAMPLE_SOURCE_ID,
    "object": "data_source",
    "name": "Human Resources",
    "database_id": EXAMPLE_DATABASE_ID,
    "file_count": 0,
    "created_at": EXAMPLE_CREATED,
    "files_url": f"https://provenance.example/v1/flow/data-sources/{EXAMPLE_SOURCE_ID}/files",
}


class DataSourcesView(APIView):
    """The organization's data sources; a new one is indexed in its default vector database."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.READ_DOCUMENTS,
        "POST": Action.MANAGE_SOURCES,
    }

    @extend_schema(
        operation_id="v1_flow_data_sources_list",
        responses={200: DataSourceList, **error_responses()},
        examples=[
            OpenApiExample("data sources", value={"object": "list", "data": [_SOURCE_EXAMPLE]})
        ],
    )
    def get(self, request: Request) -> Response:
        sources = data_sources.data_sources_of(organization=member_organization(request))
        shape = partial(data_source_output, absolute=request.build_absolute_uri)
        return Response({"object": "list", "data": [shape(s) for s in sources]})

    @extend_schema(
        operation_id="v1_flow_data_sources_create",
        request=DataSourceInput,
        responses={201: DataSourceOutput, **error_responses(400, 409, 415)},
        examples=[
            OpenApiExample("create", value={"name": "Human Resources"}, request_only=True),
            OpenApiExample("created", value=_SOURCE_EXAMPLE, response_only=True),
        ],
    )
    def post(self, request: Request) -> Response:
        form = DataSourceInput(data=json_object(request))
        form.is_valid(raise_exception=True)
        organization = member_organization(request)
        created = data_sources.data_source_create(
            organization=organization, name=form.validated_data["name"]
        )
        source = data_sources.data_source_get(
            organization=organization, data_source_id=str(created.pk)
        )
        body = data_source_output(source, request.build_absolute_uri)
        return Response(body, status=status.HTTP_201_CREATED)


class DataSourceDetailView(APIView):
    """One data source: read, rename, or delete it while it has never held a file."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.READ_DOCUMENTS,
        "PATCH": Action.MANAGE_SOURCES,
        "DELETE": Action.MANAGE_SOURCES,
    }

    @extend_schema(
        operation_id="v1_flow_data_sources_retrieve",
        responses={200: DataSourceOutput, **error_responses(404)},
        examples=[OpenApiExample("data source", value=_SOURCE_EXAMPLE)],
    )
    def get(self, request: Request, data_source_id: str) -> Response:
        source = data_sources.data_source_get(
            organization=member_organization(request), data_source_id=data_source_id
        )
        return Response(data_source_output(source, request.build_absolute_uri))

    @extend_schema(
        operation_id="v1_flow_data_sources_rename",
        request=DataSourceInput,
        responses={200: DataSourceOutput, **error_responses(400, 404, 409, 415)},
        examples=[
            OpenApiExample("rename", value={"name": "People"}, request_only=True),
            OpenApiExample(
                "renamed", value=_SOURCE_EXAMPLE | {"name": "People"}, response_only=True
            ),
        ],
    )
    def patch(self, request: Request, data_source_id: str) -> Response:
        organization = member_organization(request)
        source = data_sources.data_source_get(
            organization=organization, data_source_id=data_source_id
        )
        form = DataSourceInput(data=json_object(request))
        form.is_valid(raise_exception=True)
        data_sources.data_source_rename(data_source=source, name=form.validated_data["name"])
        return Response(data_source_output(source, request.build_absolute_uri))

    @extend_schema(
        operation_id="v1_flow_data_sources_delete",
        request=None,
        responses={200: DeletedOutput, **error_responses(404, 409)},
        examples=[
            OpenApiExample(
                "deleted",
                value={"id": EXAMPLE_SOURCE_ID, "object": "data_source.deleted", "deleted": True},
            )
        ],
    )
    def delete(self, request: Request, data_source_id: str) -> Response:
        """409 ``data_source_not_empty`` once it holds any file (deleted ones count:
        they are evidence), 409 ``data_source_in_use`` while an app reads from it."""
        source = data_sources.data_source_get(
            organization=member_organization(request), data_source_id=data_source_id
        )
        data_sources.data_source_delete(data_source=source)
        return Response(deleted_reply("data_source", data_source_id))


FileList = list_of(FileOutput, "FileList", paged=True)


class DataSourceFilesView(APIView):
    """A data source's file revisions, newest first by default (superseded and
    deleted revisions too: ``is_current`` and ``deleted_at`` say so), filtered and
    paginated by cursor like OpenAI lists."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.READ_DOCUMENTS}

    @extend_schema(
        operation_id="v1_flow_data_sources_files_list",
        parameters=[FileListQuery, *LIST_PARAMETERS],
        responses={200: FileList, **error_responses(400, 404)},
        examples=[
            OpenApiExample(
                "no file yet",
                value={
                    "object": "list",
                    "data": [],
                    "first_id": None,
                    "last_id": None,
                    "has_more": False,
                },
            )
        ],
    )
    def get(self, request: Request, data_source_id: str) -> Response:
        params = list_params(request.query_params)
        query = FileListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        source = data_sources.data_source_get(
            organization=member_organization(request), data_source_id=data_source_id
        )
        files = data_sources.data_source_files(
            data_source=source, filters=data_sources.FileFilters(**query.validated_data)
        )
        page = page_of(files, **params.as_kwargs())
        shape = partial(file_output, request=request)
        return Response(list_output(page.items, page.has_more, shape, id_field="file_id"))
