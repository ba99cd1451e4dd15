"""Admin for apps and, read-only, the evidence of every answer.

A query execution's page shows the whole chain on one screen: the answer with
its [n] markers, each quoted source with document, revision, page, lines,
section and text, the claims side by side, every retrieval hit with its
scores, the index identity, the validator result and the audit-chain status.
"""

from __future__ import annotations

from typing import cast

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from audit.ledger import ledger_record_status
from citations import exports
from citations.markers import MARKER
from citations.model_evidence import written_by
from citations.models import (
    AnswerFeedback,
    App,
    ClaimCheck,
    ClaimCitation,
    ModelCall,
    QueryExecution,
    QueryStatus,
    QuotedSource,
    RagTrace,
    ReasoningStep,
    RetrievalHit,
    StepClaim,
    StepSourceAttribution,
)
from citations.reasoning.selectors import reasoning_page
from citations.services import query_validate
from citations.validation import later_meaning
from citations.web.rendering import Marker, answer_html
from core.admin_scoping import EvidenceAdmin, OrganizationScopedAdmin, ReadOnlyInline
from core.tenancy import organization_ids_of
from documents.models import DataSource


@admin.register(App)
class AppAdmin(OrganizationScopedAdmin):
    list_display = [
        "name",
        "organization",
        "is_public",
        "generator",
        "model",
        "reasoning",
        "top_k",
        "created_at",
    ]
    list_filter = [
        ("organization", admin.RelatedOnlyFieldListFilter),
        "is_public",
        "generator",
        "reasoning",
    ]
    list_select_related = ["organization"]
    filter_horizontal = ["data_sources"]
    search_fields = ["name", "=id"]


class DataSourceFilter(admin.SimpleListFilter):
    """Answers that cite a document of this data source."""

    title = "data source"
    parameter_name = "data_source"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list:
        sources = DataSource.objects.order_by("name")
        if not request.user.is_superuser:
            sources = sources.filter(organization_id__in=organization_ids_of(request.user))
        return [(str(s.pk), s.name) for s in sources]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value():
            return queryset.filter(quoted_sources__data_source_id=self.value()).distinct()
        return queryset


class DocumentFilter(admin.SimpleListFilter):
    """Answers that cite a document of this name (any revision)."""

    title = "document"
    parameter_name = "document"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list:
        quoted = QuotedSource.objects.all()
        if not request.user.is_superuser:
            quoted = quoted.filter(query__organization_id__in=organization_ids_of(request.user))
        names = (
            quoted.values_list("document_name", flat=True)
            .distinct()
            .order_by("document_name")[:200]
        )
        return [(name, name) for name in names]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value():
            return queryset.filter(quoted_sources__document_name=self.value()).distinct()
        return queryset


class QuotedSourceInline(ReadOnlyInline):
    model = QuotedSource
    fields = [
        "quoted_as",
        "document_name",
        "file_revision",
        "page_start",
        "line_number_start",
        "line_number_end",
        "section",
        "score",
        "retriever_type",
    ]
    readonly_fields = cast("list[str]", fields)  # the stubs widen fields to groups


@admin.register(QueryExecution)
class QueryExecutionAdmin(EvidenceAdmin):
    list_display = [
        "question_short",
        "answer_short",
        "app",
        "organization",
        "caller",
        "validator_status",
        "latency",
        "created_at",
    ]
    list_filter = [
        ("organization", admin.RelatedOnlyFieldListFilter),
        ("app", admin.RelatedOnlyFieldListFilter),
        DataSourceFilter,
        DocumentFilter,
        "caller",
        "hits__retriever_type",
        "validator_status",
        "status",
        "origin",
        "created_at",
    ]
    list_select_related = ["app", "organization"]
    search_fields = [
        "question",
        "answer",
        "quoted_sources__document_name",
        "quoted_sources__chunk_text",
        "=id",
    ]
    date_hierarchy = "created_at"
    actions = ["export_csv", "export_json"]
    change_form_template = "admin/citations/queryexecution/evidence.html"

    @admin.display(description="question", ordering="question")
    def question_short(self, obj: QueryExecution) -> str:
        return obj.question[:90]

    @admin.display(description="answer")
    def answer_short(self, obj: QueryExecution) -> str:
        return obj.answer[:120]

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, obj: QueryExecution) -> str:
        return f"{obj.latency_ms:.0f} ms" if obj.latency_ms is not None else "–"

    def get_urls(self) -> list:
        report = self.admin_site.admin_view(self.report_view)
        return [
            path("<uuid:object_id>/report/", report, name="citations_queryexecution_report"),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        execution = get_object_or_404(self.get_queryset(request), pk=object_id)
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), **evidence_context(execution)}
        )

    def report_view(self, request: HttpRequest, object_id: str) -> TemplateResponse:
        """A printable A4 report of one answer, its sources and its hits."""
        if not self.has_view_permission(request):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        execution = get_object_or_404(self.get_queryset(request), pk=object_id)
        context = {
            **self.admin_site.each_context(request),
            **evidence_context(execution),
            "printed_at": timezone.now(),
            "printed_by": request.user,
        }
        return TemplateResponse(request, "admin/citations/queryexecution/report.html", context)

    @admin.action(description="Export selected answers with provenance (CSV)")
    def export_csv(self, request: HttpRequest, queryset: QuerySet) -> StreamingHttpResponse:
        response = StreamingHttpResponse(exports.csv_rows(queryset), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="answers-provenance.csv"'
        return response

    @admin.action(description="Export selected answers with provenance (JSON)")
    def export_json(self, request: HttpRequest, queryset: QuerySet) -> StreamingHttpResponse:
        response = StreamingHttpResponse(
            exports.json_chunks(queryset), content_type="application/json"
        )
        response["Content-Disposition"] = 'attachment; filename="answers-provenance.json"'
        return response


def _answer_with_links(execution: QueryExecution) -> SafeString:
    """The answer as rendered Markdown, each [n] linking to its source on the page."""
    numbers = {source.quoted_as for source in execution.quoted_sources.all()}
    markers = [
        Marker(
            at=found.start() - 1,
            quoted_as=found.group(1),
            href=f"#source-{found.group(1)}",
            label=f"Source {found.group(1)}",
        )
        for found in MARKER.finditer(execution.answer)
        if found.group(1) in numbers and found.start() > 0
    ]
    return answer_html(execution.answer, markers)


def evidence_context(execution: QueryExecution) -> dict:
    sources = list(
        execution.quoted_sources.select_related("file", "chunk")
        .defer("chunk__embedding")
        .order_by("id")
    )
    claims = list(
        ClaimCitation.objects.filter(query=execution)
        .select_related("quoted_source")
        .order_by("segment")
    )
    hits = list(
        RetrievalHit.objects.filter(query=execution).select_related("file").order_by("k_pos")
    )
    for source in sources:  # links the template shows beside each source (no model fields)
        source.chunk_admin_url = reverse("admin:documents_chunk_change", args=[source.chunk_id])  # type: ignore[attr-defined]
        source.file_admin_url = reverse("admin:documents_file_change", args=[source.file_id])  # type: ignore[attr-defined]
        source.download_url = reverse("admin:documents_file_download", args=[source.file_id])  # type: ignore[attr-defined]
    validation = query_validate(execution=execution)
    return {
        "execution": execution,
        "answer_html": _answer_with_links(execution),
        "sources": sources,
        "claims": claims,
        "hits": hits,
        "validation": validation,
        "validation_meaning": later_meaning(validation["result"]),
        "chain_status": ledger_record_status(
            execution, chained_later=execution.status == QueryStatus.RUNNING
        ),
        "report_url": reverse("admin:citations_queryexecution_report", args=[execution.pk]),
        "written_by": written_by(execution),
        "model_calls": list(execution.model_calls.defer("prompt", "raw_response")),
        "claim_checks": list(
            execution.claim_checks.select_related("claim__quoted_source").order_by(
                "model_call", "sentence", "id"
            )
        ),
        "reasoning": reasoning_page(execution=execution, viewer=_source_anchor),
    }


def _source_anchor(source: QuotedSource) -> str:
    """A final [n] on the evidence page itself."""
    return f"#source-{source.quoted_as}"


@admin.register(QuotedSource)
class QuotedSourceAdmin(EvidenceAdmin):
    organization_path = "query__organization"
    list_display = [
        "quoted_as",
        "document_name",
        "file_revision",
        "page_start",
        "section",
        "score",
        "query",
    ]
    list_select_related = ["query"]
    search_fields = ["document_name", "chunk_text", "=query__id"]


@admin.register(ClaimCitation)
class ClaimCitationAdmin(EvidenceAdmin):
    organization_path = "query__organization"
    list_display = ["segment", "reply_sentence", "source_sentence", "query"]
    list_select_related = ["query"]
    search_fields = ["reply_sentence", "source_sentence"]


@admin.register(RetrievalHit)
class RetrievalHitAdmin(EvidenceAdmin):
    organization_path = "query__organization"
    list_display = [
        "k_pos",
        "k_final",
        "retriever_type",
        "score_raw",
        "score_norm",
        "section",
        "query",
    ]
    list_select_related = ["query"]
    list_filter = ["retriever_type"]


@admin.register(ModelCall)
class ModelCallAdmin(EvidenceAdmin):
    """Each request to a model and its reply as received, read-only."""

    organization_path = "query__organization"
    list_display = ["query", "attempt", "provider", "model", "response_id", "latency_ms"]
    list_select_related = ["query"]
    list_filter = ["provider", "model"]
    search_fields = ["=query__id", "response_id"]


@admin.register(ClaimCheck)
class ClaimCheckAdmin(EvidenceAdmin):
    """Every claim of a model's reply and why it is, or is not, supported."""

    organization_path = "query__organization"
    list_display = ["query", "sentence", "supported", "reason", "reply_sentence"]
    list_select_related = ["query"]
    list_filter = ["supported", "reason"]
    search_fields = ["reply_sentence", "quote", "=query__id"]


@admin.register(ReasoningStep)
class ReasoningStepAdmin(EvidenceAdmin):
    """The steps of answers worked through in steps, read-only."""

    organization_path = "query__organization"
    list_display = ["query", "step_number", "question", "outcome", "confidence_score"]
    list_select_related = ["query"]
    list_filter = ["outcome", "proposed_by"]
    search_fields = ["question", "intermediate_answer", "=query__id"]


@admin.register(StepSourceAttribution)
class StepSourceAttributionAdmin(EvidenceAdmin):
    """What each step cites, frozen at query time, read-only."""

    organization_path = "query__organization"
    list_display = [
        "step",
        "quoted_as",
        "document_title",
        "chunk_index",
        "retrieval_rank",
        "relevance_score",
    ]
    list_select_related = ["step"]
    search_fields = ["document_title", "excerpt", "=query__id"]


@admin.register(StepClaim)
class StepClaimAdmin(EvidenceAdmin):
    organization_path = "query__organization"
    list_display = ["step", "segment", "reply_sentence", "source_sentence"]
    list_select_related = ["step"]
    search_fields = ["reply_sentence", "=query__id"]


@admin.register(RagTrace)
class RagTraceAdmin(EvidenceAdmin):
    organization_path = "query__organization"
    list_display = ["ts", "qid", "seg", "lambda_state", "section_id", "rev"]
    list_select_related = ["query"]
    search_fields = ["qid", "line"]


from citations.threads import admin as threads_admin  # noqa: E402, F401 - thread admins


@admin.register(AnswerFeedback)
class AnswerFeedbackAdmin(EvidenceAdmin):
    """Readers' verdicts on answers, as recorded (read-only: they are evidence)."""

    organization_path = "organization"
    list_display = ["rating", "comment_short", "caller", "query", "organization", "created_at"]
    list_filter = ["rating", ("organization", admin.RelatedOnlyFieldListFilter), "created_at"]
    list_select_related = ["query", "organization"]
    search_fields = ["comment", "caller", "=query__id"]
    date_hierarchy = "created_at"

    @admin.display(description="comment")
    def comment_short(self, obj: AnswerFeedback) -> str:
        return obj.comment[:120]
