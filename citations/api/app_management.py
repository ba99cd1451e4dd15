"""``/v1/flow/apps``: apps read, created, changed and deleted while they never answered."""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from django.urls import path
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from citations import llm_apps
from citations.api.app_serializers import (
    AppChangeInput,
    AppCreateInput,
    AppList,
    AppOutput,
    app_output,
)
from core.api_shapes import (
    EXAMPLE_APP_ID,
    EXAMPLE_CREATED,
    EXAMPLE_SOURCE_ID,
    DeletedOutput,
    deleted_reply,
    json_object,
)
from core.errors import error_responses
from core.roles import Action
from core.tenancy import member_organization
from documents import data_sources

_APP_EXAMPLE = {
    "id": EXAMPLE_APP_ID,
    "object": "app",
    "name": "HR answers",
    "data_sources": [{"id": EXAMPLE_SOURCE_ID, "name": "Human Resources"}],
    "is_public": False,
    "generator": "extractive",
    "model": "",
    "prompt": "",
    "temperature": None,
    "max_output_tokens": 1024,
    "reasoning": "single",
    "top_k": 10,
    "candidate_k": 40,
    "min_score": 0.0,
    "answer_threshold": None,
    "max_answer_sentences": 4,
    "created_at": EXAMPLE_CREATED,
    "query_url": f"https://provenance.example/semantics/apps/{EXAMPLE_APP_ID}/query-executions",
}


class AppsView(APIView):
    """The organization's apps (``llm_app_id``), and making one."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.ASK,
        "POST": Action.MANAGE_SOURCES,
    }

    @extend_schema(
        operation_id="v1_flow_apps_list",
        responses={200: AppList, **error_responses()},
        examples=[OpenApiExample("apps", value={"object": "list", "data": [_APP_EXAMPLE]})],
    )
    def get(self, request: Request) -> Response:
        apps = llm_apps.apps_of(organization=member_organization(request))
        shape = partial(app_output, absolute=request.build_absolute_uri)
        return Response({"object": "list", "data": [shape(app) for app in apps]})

    @extend_schema(
        operation_id="v1_flow_apps_create",
        request=AppCreateInput,
        responses={201: AppOutput, **error_responses(400, 409, 415)},
        examples=[
            OpenApiExample(
                "create",
                value={"name": "HR answers", "data_sources": ["Human Resources"], "top_k": 10},
                request_only=True,
            ),
            OpenApiExample("created", value=_APP_EXAMPLE, response_only=True),
        ],
    )
    def post(self, request: Request) -> Response:
        form = AppCreateInput(data=json_object(request))
        form.is_valid(raise_exception=True)
        values, organization = dict(form.validated_data), member_organization(request)
        sources = data_sources.data_sources_named(
            organization=organization, refs=values.pop("data_sources")
        )
        retrieval = AppCreateInput.retrieval_of(values)
        model_settings = AppCreateInput.model_settings_of(values)
        app = llm_apps.app_create(
            organization=organization,
            data_source_names=[source.name for source in sources],
            retrieval=retrieval,
            model_settings=model_settings,
            **values,
        )
        app = llm_apps.app_get(organization=organization, app_id=str(app.pk))
        body = app_output(app, request.build_absolute_uri)
        return Response(body, status=status.HTTP_201_CREATED)


class AppDetailView(APIView):
    """One app: read it, change its settings, or delete it while it never answered."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.ASK,
        "PATCH": Action.MANAGE_SOURCES,
        "DELETE": Action.MANAGE_SOURCES,
    }

    @extend_schema(
        operation_id="v1_flow_apps_retrieve",
        responses={200: AppOutput, **error_responses(404)},
        examples=[OpenApiExample("app", value=_APP_EXAMPLE)],
    )
    def get(self, request: Request, app_id: str) -> Response:
        app = llm_apps.app_get(organization=member_organization(request), app_id=app_id)
        return Response(app_output(app, request.build_absolute_uri))

    @extend_schema(
        operation_id="v1_flow_apps_update",
        request=AppChangeInput,
        responses={200: AppOutput, **error_responses(400, 404, 409, 415)},
        examples=[
            OpenApiExample("change", value={"top_k": 5, "min_score": 0.2}, request_only=True),
            OpenApiExample(
                "changed", value=_APP_EXAMPLE | {"top_k": 5, "min_score": 0.2}, response_only=True
            ),
        ],
    )
    def patch(self, request: Request, app_id: str) -> Response:
        """Only the fields sent change; ``data_sources``, when sent, replaces the list.
        Past answers keep the settings they were given with."""
        organization = member_organization(request)
        app = llm_apps.app_get(organization=organization, app_id=app_id)
        form = AppChangeInput(data=json_object(request))
        form.is_valid(raise_exception=True)
        values = dict(form.validated_data)
        refs = values.pop("data_sources", None)
        sources = (
            data_sources.data_sources_named(organization=organization, refs=refs)
            if refs is not None
            else None
        )
        name = values.pop("name", None)
        llm_apps.app_update(app=app, name=name, data_sources=sources, settings=values)
        app = llm_apps.app_get(organization=organization, app_id=app_id)
        return Response(app_output(app, request.build_absolute_uri))

    @extend_schema(
        operation_id="v1_flow_apps_delete",
        request=None,
        responses={200: DeletedOutput, **error_responses(404, 409)},
        examples=[
            OpenApiExample(
                "deleted", value={"id": EXAMPLE_APP_ID, "object": "app.deleted", "deleted": True}
            )
        ],
    )
    def delete(self, request: Request, app_id: str) -> Response:
        """409 ``app_has_answers`` once the app has answered: answers are evidence,
        and an app's answers are never deleted with it."""
        app = llm_apps.app_get(organization=member_organization(request), app_id=app_id)
        llm_apps.app_delete(app=app)
        return Response(deleted_reply("app", app_id))


app_urls = [
    path("apps", AppsView.as_view(), name="app-list"),
    path("apps/<str:app_id>", AppDetailView.as_view(), name="app-detail"),
]
