"""The source-citation endpoints (``/semantics/apps/…``) and the validator."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from citations import records, selectors
from citations.api import model_output
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
    query_execution_output,
    quoted_source_output,
)
from citations.generators import ModelError
from citations.models import QueryExecution
from citations.payload import revision_label
from citations.services import QueryAbandoned, QueryRejected, query_execute, query_validate
from citations.validation import validate_citations
from documents.api.errors import ApiError, error_responses
from documents.models import ApiKey, Chunk
from documents.tenancy import organization_of


class _AppView(APIView):
    """Public apps answer without a key, so access is decided per app, not globally."""

    permission_classes = [AllowAny]

    def app(self, request: Request, llm_app_id: str):  # noqa: ANN201
        return selectors.app_for_caller(app_id=llm_app_id, organization=organization_of(request))

    def execution(self, request: Request, llm_app_id: str, query_id: str) -> QueryExecution:
        """An answer of the app the caller may read (``selectors.readable_queries``)."""
        return selectors.query_for_app(
            app=self.app(request, llm_app_id),
            query_id=query_id,
            organization=organization_of(request),
        )

    def is_member(self, request: Request, execution: QueryExecution) -> bool:
        return selectors.caller_is_member(app=execution.app, organization=organization_of(request))


class QueryExecutionsView(_AppView):
    """Ask the app a question; the answer carries ``[n]`` references."""

    @extend_schema(
        request=QueryInput,
        responses={201: QueryExecutionOutput, **error_responses(400, 404, 415)},
    )
    def post(self, request: Request, llm_app_id: str) -> Response:
        app = self.app(request, llm_app_id)
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
                user=request.user,
                api_key=request.auth if isinstance(request.auth, ApiKey) else None,
            )
        except QueryRejected as exc:
            raise ApiError(exc.message, code=exc.code, param="query") from exc
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

    @extend_schema(responses={200: QueryExecutionDetailOutput, **error_responses(404)})
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        body = query_execution_output(execution, request)
        body["hits"] = [
            {
                "k_pos": h.k_pos,
                "k_final": h.k_final,
                "retriever_type": h.retriever_type,
                "score_raw": h.score_raw,
                "score_norm": h.score_norm,
                "rerank_score": h.rerank_score,
                "citation": h.payload,
            }
            for h in execution.hits.order_by("k_pos")
        ]
        body["written_by"] = model_output.written_by(execution)
        body["auditable"] = model_output.auditable_block(execution)
        body["model_calls"] = model_output.model_calls_output(execution)
        body["claim_checks"] = model_output.claim_checks_output(execution)
        return Response(body)


class CitationsMarkdownView(_AppView):
    """The answer as Markdown (provenance-records): the text with a footnote per claim,
    then every retrieved source; links are absolute (``?base_url=`` or this host)."""

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

    @extend_schema(responses={200: QuotedSourceOutput(many=True), **error_responses(404)})
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        sources = selectors.quoted_sources_of(execution=execution)
        member = self.is_member(request, execution)
        return Response([quoted_source_output(s, request, member=member) for s in sources])


class SentenceCitationsView(_AppView):
    """Deprecated v1: sentence-level citations of an answer."""

    @extend_schema(
        request=None,
        responses={200: SentenceCitationOutput(many=True), **error_responses(404)},
        deprecated=True,
    )
    def post(self, request: Request, llm_app_id: str, query_execution_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_execution_id)
        claims = list(selectors.claims_of(execution=execution))
        threshold, member = execution.app.answer_threshold, self.is_member(request, execution)
        return Response(
            [claim_output(c, len(claims), request, threshold, member=member) for c in claims]
        )


class QueryValidationView(_AppView):
    """Re-validate a recorded answer's citations against the live index."""

    @extend_schema(responses={200: QueryValidationOutput, **error_responses(404)})
    def get(self, request: Request, llm_app_id: str, query_id: str) -> Response:
        execution = self.execution(request, llm_app_id, query_id)
        return Response(query_validate(execution=execution))


class CitationValidateView(APIView):
    """Validate a citation payload list; snippets of the caller's organization are
    checked against the live index hash, analyzer and revision."""

    @extend_schema(
        request=CitationValidateInput,
        responses={200: CitationValidateOutput, **error_responses(400, 415)},
    )
    def post(self, request: Request) -> Response:
        items = request.data.get("citations") if isinstance(request.data, dict) else None
        if not isinstance(items, list):
            raise ValidationError({"citations": "a list of citation payloads is required"})
        allow_cross = request.data.get("allow_cross_section", False)
        if not isinstance(allow_cross, bool):  # "false" is a string, and truthy
            raise ApiError(
                "'allow_cross_section' must be true or false",
                code="invalid_allow_cross_section",
                param="allow_cross_section",
            )
        ids = [str(i.get("snippet_id")) for i in items if isinstance(i, dict)]
        chunks = _chunks_of(organization_of(request), ids)
        databases = {c.vector_database_id: c.vector_database for c in chunks.values()}
        live_hashes = {d.index_hash for d in databases.values()}
        analyzers = {d.analyzer for d in databases.values()}
        models = {d.embed_model_id for d in databases.values()}

        result = validate_citations(
            items,
            allow_cross_section=allow_cross,
            live_index_hash=live_hashes.pop() if len(live_hashes) == 1 else None,
            read_analyzer=analyzers.pop() if len(analyzers) == 1 else None,
            live_embed_model=models.pop() if len(models) == 1 else None,
            revisions={
                k: revision_label(c.file.revision, c.file.sha256) for k, c in chunks.items()
            },
            spans={k: (c.char_start, c.char_end) for k, c in chunks.items()},
        )
        return Response({"result": result})


def _chunks_of(organization, ids: list[str]) -> dict[str, Chunk]:  # noqa: ANN001
    import uuid

    valid = []
    for raw in ids:
        try:
            valid.append(uuid.UUID(raw))
        except ValueError:
            continue
    rows = (
        Chunk.objects.filter(organization=organization, pk__in=valid)
        .select_related("file", "vector_database")
        .defer("embedding", "chunk_text")
    )
    return {str(c.pk): c for c in rows}
