"""The source-citation endpoints (``/semantics/apps/…``) and the validator."""

from __future__ import annotations

from typing import ClassVar

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from citations import records, selectors
from citations.api.reasoning_output import (
    ReasoningOutput,
    include_excerpts_param,
    reasoning_output,
)
from citations.api.serializers import (
    CitationValidateInput,
    CitationValidateOutput,
    QueryExecutionDetailOutput,
    QueryExecutionOutput,
    QueryInput,
    QueryValidationOutput,
    QuotedSourceOutput,
    SentenceCitationOutput,
    claim_output,
    query_execution_detail_output,
    query_execution_output,
    quoted_source_output,
)
from citations.generators import ModelError
from citations.generators.extractive.scorer import abstention_threshold
from citations.models import App, QueryExecution
from citations.services.abandoning import QueryAbandoned
from citations.services.execution import query_execute
from citations.services.revalidation import query_validate
from core.caller import Caller
from core.errors import ApiError, error_responses
from core.permissions import Reader, RoleAllowsAnyCaller, view_reach
from core.roles import Action, Reach
from core.tenancy import organization_of


class _AppView(APIView):
    """Public apps answer without a key, so access is decided per app, not globally;
    a caller with a role is held to it (core.roles), and reads the answers its role
    reaches: its own, every one of its organization for a role that audits."""

    permission_classes = [RoleAllowsAnyCaller]
    role_reach: ClassVar[dict[str, Reach]] = {"GET": Reach.READ, "POST": Reach.READ}

    def app(self, request: Request, llm_app_id: str) -> App:
        return selectors.app_for_caller(app_id=llm_app_id, organization=organization_of(request))

    def execution(self, request: Request, llm_app_id: str, query_id: str) -> QueryExecution:
        """An answer of the app the caller may read (``selectors.readable_queries``)."""
        return selectors.query_for_app(
            app=self.app(request, llm_app_id),
            query_id=query_id,
            organization=organization_of(request),
            reader=Reader.of(request),
            reach=view_reach(self, request.method or ""),
        )

    def is_member(self, request: Request, execution: QueryExecution) -> bool:
        return selectors.caller_is_member(app=execution.app, organization=organization_of(request))


class QueryExecutionsView(_AppView):
    """Ask the app a question; the answer carries ``[n]`` references."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.ASK}

    @extend_schema(
        request=QueryInput,
        responses={201: QueryExecutionOutput, **error_responses(400, 404, 415)},
    )
    def post(self, request: Request, llm_app_id: str) -> Response:
        caller = Caller.from_request(request)
        app = selectors.app_for_caller(app_id=llm_app_id, organization=caller.organization)
        if not isinstance(request.data, dict) or "query" not in request.data:
            raise ApiError(
                "the body must be a JSON object with a 'query' string",
                code="invalid_query",
                param="query",
            )
        try:
            execution = query_execute(
                app=app,
                question=request.data["query"],
                user=caller.user,
                api_key=caller.api_key,
                caller_address=caller.origin,
                user_agent=caller.user_agent,
                base_url=request.build_absolute_uri("/"),
            )
        except ModelError as exc:  # the failed query execution is recorded with the reason
            raise ApiError(exc.message, code=exc.code, status_code=exc.status) from exc
        except QueryAbandoned as exc:  # the sweeper failed it meanwhile: recorded, ask again
            raise ApiError(
                "the answer took too long and was abandoned; ask again",
                code="answer_abandoned",
                status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
            ) from exc
        return Response(query_execution_output(execution, request), status=status.HTTP_201_CREATED)


class QueryExecutionDetailView(_AppView):
    """A recorded answer, with every retrieval hit and its citation payload."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.ASK}

    @extend_schema(responses={200: QueryExecutionDetailOutput, **error_responses(404)})
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        return Response(query_execution_detail_output(execution, request))


class CitationsMarkdownView(_AppView):
    """The answer as Markdown (provenance-records): the text with a footnote per claim,
    then every retrieved source; links are absolute (``?base_url=`` or this host)."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.ASK}

    @extend_schema(
        parameters=[OpenApiParameter("base_url", str, description="absolute links' origin")],
        responses={(200, "text/markdown"): OpenApiTypes.STR, **error_responses(400, 404)},
    )
    def get(self, request: Request, llm_app_id: str, query_id: str) -> HttpResponse:
        execution = self.execution(request, llm_app_id, query_id)
        base_url = request.query_params.get("base_url") or request.build_absolute_uri("/")
        if not base_url.startswith(("http://", "https://")) or len(base_url) > 500:
            raise ApiError(
                "base_url must be an http(s) URL", code="invalid_base_url", param="base_url"
            )
        text = records.answer_markdown(execution, base_url=base_url)
        return HttpResponse(text, content_type="text/markdown; charset=utf-8")


class ReasoningView(_AppView):
    """How the answer was found: its steps, each with its sub-question, short answer
    and sources, and the source summary (cot-source-attribution)."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.ASK}

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "include_excerpts", bool, description="false leaves the excerpts out (null)"
            )
        ],
        responses={200: ReasoningOutput, **error_responses(400, 404)},
    )
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        excerpts = include_excerpts_param(request.query_params.get("include_excerpts"))
        if excerpts is None:
            raise ApiError(
                "include_excerpts must be true or false",
                code="invalid_include_excerpts",
                param="include_excerpts",
            )
        return Response(reasoning_output(execution, request, include_excerpts=excerpts))


class QuotedSourcesView(_AppView):
    """The sources behind the answer's ``[n]`` markers (source-citation v2)."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.ASK}

    @extend_schema(responses={200: QuotedSourceOutput(many=True), **error_responses(404)})
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        sources = selectors.quoted_sources_of(execution=execution)
        member = self.is_member(request, execution)
        return Response([quoted_source_output(s, request, member=member) for s in sources])


class SentenceCitationsView(_AppView):
    """Deprecated v1: sentence-level citations of an answer."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.ASK}

    @extend_schema(
        request=None,
        responses={200: SentenceCitationOutput(many=True), **error_responses(404)},
        deprecated=True,
    )
    def post(self, request: Request, llm_app_id: str, query_execution_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_execution_id)
        claims = list(selectors.claims_of(execution=execution))
        threshold = abstention_threshold(execution.app.answer_threshold)
        member = self.is_member(request, execution)
        return Response(
            [claim_output(c, len(claims), request, threshold, member=member) for c in claims]
        )


class QueryValidationView(_AppView):
    """Re-validate a recorded answer's citations against the live index."""

    role_actions: ClassVar[dict[str, Action]] = {"GET": Action.ASK}

    @extend_schema(responses={200: QueryValidationOutput, **error_responses(404)})
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        return Response(query_validate(execution=execution))


class CitationValidateView(APIView):
    """Validate a citation payload list; snippets of the caller's organization are
    checked against the live index hash, analyzer and revision."""

    role_actions: ClassVar[dict[str, Action]] = {"POST": Action.ASK}

    @extend_schema(
        request=CitationValidateInput,
        responses={200: CitationValidateOutput, **error_responses(400, 415)},
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        items = data.get("citations")
        if not isinstance(items, list):
            raise ValidationError({"citations": "a list of citation payloads is required"})
        allow_cross = data.get("allow_cross_section", False)
        if not isinstance(allow_cross, bool):  # "false" is a string, and truthy
            raise ApiError(
                "'allow_cross_section' must be true or false",
                code="invalid_allow_cross_section",
                param="allow_cross_section",
            )
        result = selectors.citations_validate(
            items=items, allow_cross_section=allow_cross, organization=organization_of(request)
        )
        return Response({"result": result})
