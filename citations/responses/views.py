"""``/v1/responses``: OpenAI's Responses API over an app, thin — parse, call one
service, shape the response object (or stream its events)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django.http import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from citations.deletions import deletion_reason
from citations.models import ResponseRecord
from citations.responses import events, services
from citations.responses.output import response_output
from citations.responses.schema import (
    RESPONSE_EVENTS,
    ResponseCreateInput,
    ResponseDeleted,
    ResponseObject,
)
from citations.threads.errors import ThreadRejected
from citations.threads.schema import DeletionInput
from core.caller import Caller
from core.errors import error_responses
from core.permissions import Reader, view_reach
from core.roles import Action, Reach
from core.sse import event_stream
from core.tenancy import organization_of

INCLUDE_PARAMETER = OpenApiParameter(
    "include[]",
    {"type": "array", "items": {"type": "string", "enum": [services.INCLUDE_RESULTS]}},
    description="ask for the file_search call's results",
)


def _body(request: Request) -> Mapping[str, Any]:
    if not isinstance(request.data, Mapping):
        raise ThreadRejected("the body must be a JSON object", code="invalid_body")
    return request.data


def _include(request: Request) -> bool:
    query = request.query_params
    return services.include_results(query.getlist("include[]") + query.getlist("include"))


class ResponsesView(APIView):
    """Answer now: the response, or with ``"stream": true`` its events."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.ASK}

    @extend_schema(
        request=ResponseCreateInput,
        responses={
            (200, "application/json"): ResponseObject,
            (200, "text/event-stream"): RESPONSE_EVENTS,
            **error_responses(400, 404, 415),
        },
    )
    def post(self, request: Request) -> HttpResponseBase:
        caller = Caller.from_request(request)
        organization = caller.organization
        assert organization is not None  # the HasOrganization permission let it through
        asked = services.response_request_parse(
            organization=organization, body=_body(request), reader=Reader.of(request)
        )
        record = services.response_start(
            organization=organization, request=asked, user=caller.user, api_key=caller.api_key
        )
        absolute = request.build_absolute_uri
        if asked.stream:
            return event_stream(
                events.response_events(
                    response_id=str(record.pk),
                    include_results=asked.include_results,
                    absolute=absolute,
                    caller_address=caller.origin,
                    user_agent=caller.user_agent,
                )
            )
        record = services.response_execute(
            response_id=record.pk,
            caller_address=caller.origin,
            user_agent=caller.user_agent,
            base_url=absolute("/"),
        )
        return Response(
            response_output(record, include_results=asked.include_results, absolute=absolute)
        )


class ResponseDetailView(APIView):
    """A response the caller reaches (its own; every one of the organization for a
    role that audits); deleting hides it from everyone, and is recorded with who,
    when, from where and the optional reason."""

    role_actions: ClassVar[dict[str, Action]] = {
        "GET": Action.ASK,
        "DELETE": Action.DELETE_CONVERSATIONS,
    }
    role_reach: ClassVar[dict[str, Reach]] = {"GET": Reach.READ, "DELETE": Reach.ORGANIZATION}

    def record(self, request: Request, response_id: str) -> ResponseRecord:
        return services.response_get(
            organization=organization_of(request),
            response_id=response_id,
            reader=Reader.of(request),
            reach=view_reach(self, request.method or ""),
        )

    @extend_schema(
        parameters=[INCLUDE_PARAMETER],
        responses={200: ResponseObject, **error_responses(400, 404)},
    )
    def get(self, request: Request, response_id: str) -> Response:
        include = _include(request)
        record = self.record(request, response_id)
        return Response(
            response_output(record, include_results=include, absolute=request.build_absolute_uri)
        )

    @extend_schema(
        request=DeletionInput, responses={200: ResponseDeleted, **error_responses(400, 404)}
    )
    def delete(self, request: Request, response_id: str) -> Response:
        record, reason = self.record(request, response_id), deletion_reason(request.data)
        services.response_delete(
            response=record,
            caller=Caller.from_request(request),
            role=Reader.of(request).role,
            reason=reason,
        )
        return Response({"id": str(record.pk), "object": "response", "deleted": True})
