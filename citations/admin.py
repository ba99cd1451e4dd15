"""Admin for apps and, read-only, the evidence of every answer.

A query execution's page shows the whole chain on one screen: the answer with
its [n] markers, each quoted source with document, revision, page, lines,
section and text, the claims side by side, every retrieval hit with its
scores, the index identity, the validator result and the audit-chain status.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from audit.ledger import ledger_record_status
from citations import exports
from citations.admin_columns import answer_label, latency_label, quote_label
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
from citations.presentation import Marker, answer_html
from citations.reasoning.selectors import reasoning_page
from citations.services.revalidation import query_validate
from citations.validation import later_meaning
from citations.web.rendering import passage_html
from citations.web.source_pages import (
    ViewerLinks,
    hit_page_context,
    source_crop_response,
    source_page_context,
)
from core.admin_scoping import EvidenceAdmin, OrganizationScopedAdmin, ReadOnlyInline
from core.role_backend import organizations_granting
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


_AUDIT = "citations.view_queryexecution"  # reading answers is what these filters serve


class DataSourceFilter(admin.SimpleListFilter):
    """Answers that cite a document of this data source."""

    title = "data source"
    parameter_name = "data_source"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list:
        sources = DataSource.objects.order_by("name")
        if not request.user.is_superuser:
            mine = organizations_granting(request.user, _AUDIT)
            sources = sources.filter(organization_id__in=mine)
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
            mine = organizations_granting(request.user, _AUDIT)
            quoted = quoted.filter(query__organization_id__in=mine)
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
        "created_at",
        "latency",
        "answer_short",
        "app",
        "organization",
        "caller",
        "caller_address",
        "validator_status",
    ]
    ordering = ["-created_at"]
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
        "=caller_address",
    ]
    date_hierarchy = "created_at"
    actions = ["export_csv", "export_json"]
    change_form_template = "admin/citations/queryexecution/evidence.html"

    @admin.display(description="question", ordering="question")
    def question_short(self, obj: QueryExecution) -> str:
        return obj.question[:90]

    @admin.display(description="answer")
    def answer_short(self, obj: QueryExecution) -> str:
        return answer_label(obj.answer, 120)

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, obj: QueryExecution) -> str:
        return latency_label(obj.latency_ms)

    def get_urls(self) -> list:
        report = self.admin_site.admin_view(self.report_view)
        source = self.admin_site.admin_view(self.source_view)
        crop = self.admin_site.admin_view(self.source_crop_view)
        hit = self.admin_site.admin_view(self.hit_view)
        return [
            path("<uuid:object_id>/report/", report, name="citations_queryexecution_report"),
            path(
                "<uuid:object_id>/sources/<str:quoted_as>/",
                source,
                name="citations_queryexecution_source",
            ),
            path(
                "<uuid:object_id>/sources/<str:quoted_as>/crop.png",
                crop,
                name="citations_queryexecution_source_crop",
            ),
            path(
                "<uuid:object_id>/retrieved/<int:k_pos>/",
                hit,
                name="citations_queryexecution_hit",
            ),
            *super().get_urls(),
        ]

    def _viewable(self, request: HttpRequest, object_id: str) -> QueryExecution:
        """An answer of an organization where the officer's role lets them read answers:
        403 without that permission anywhere, 404 for another organization's."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return get_object_or_404(self.get_queryset(request).select_related("app"), pk=object_id)

    def source_view(self, request: HttpRequest, object_id: str, quoted_as: str) -> HttpResponse:
        """``[n]`` in the reader's source viewer, for any answer the officer may audit."""
        execution = self._viewable(request, object_id)
        context = source_page_context(
            request, execution=execution, quoted_as=quoted_as, links=_officer_links(execution)
        )
        return render(request, "web/source.html", context)

    def source_crop_view(
        self, request: HttpRequest, object_id: str, quoted_as: str
    ) -> HttpResponse:
        execution = self._viewable(request, object_id)
        return source_crop_response(request, execution=execution, quoted_as=quoted_as)

    def hit_view(self, request: HttpRequest, object_id: str, k_pos: int) -> HttpResponse:
        """A retrieval hit, cited or not, in the reader's source viewer."""
        execution = self._viewable(request, object_id)
        context = hit_page_context(
            request, execution=execution, k_pos=k_pos, links=_officer_links(execution)
        )
        return render(request, "web/source.html", context)

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
        execution = self._viewable(request, object_id)
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


def _officer_links(execution: QueryExecution) -> ViewerLinks:
    return ViewerLinks(
        back_url=reverse("admin:citations_queryexecution_change", args=[execution.pk]),
        back_label="Back to the evidence",
        crop_route="admin:citations_queryexecution_source_crop",
    )


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
    for source in sources:  # what the template shows beside each source (no model fields)
        quoted = [(c.source_start, c.source_end) for c in claims if c.quoted_source_id == source.pk]
        source.rendered = passage_html(source.chunk_text, quoted)  # type: ignore[attr-defined]
        source.viewer_url = reverse(  # type: ignore[attr-defined]
            "admin:citations_queryexecution_source", args=[execution.pk, source.quoted_as]
        )
        source.chunk_admin_url = reverse("admin:documents_chunk_change", args=[source.chunk_id])  # type: ignore[attr-defined]
        source.file_admin_url = reverse("admin:documents_file_change", args=[source.file_id])  # type: ignore[attr-defined]
        source.download_url = reverse("admin:documents_file_download", args=[source.file_id])  # type: ignore[attr-defined]
    cited_as = {source.hit_id: source.quoted_as for source in sources}
    for hit in hits:
        hit.quoted_as = cited_as.get(hit.pk, "")  # type: ignore[attr-defined]
        hit.viewer_url = reverse(  # type: ignore[attr-defined]
            "admin:citations_queryexecution_hit", args=[execution.pk, hit.k_pos]
        )
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


class AnswerPartAdmin(EvidenceAdmin):
    """A row of an answer's evidence, listed newest answer first with the answer's time."""

    organization_path = "query__organization"

    @admin.display(description="answered at", ordering="query__created_at")
    def answered_at(self, obj: Any) -> datetime:
        return cast("datetime", obj.query.created_at)

    @admin.display(description="answer latency", ordering="query__latency_ms")
    def answer_latency(self, obj: Any) -> str:
        return latency_label(obj.query.latency_ms)

    @admin.display(description="answer says", ordering="reply_sentence")
    def reply_shown(self, obj: Any) -> str:
        return answer_label(obj.reply_sentence)

    @admin.display(description="source says", ordering="source_sentence")
    def source_shown(self, obj: Any) -> str:
        return quote_label(obj.source_sentence)


_ANSWER_TIME = ["answered_at", "answer_latency"]


@admin.register(QuotedSource)
class QuotedSourceAdmin(AnswerPartAdmin):
    ordering = ["-query__created_at", "id"]
    list_display = [
        *_ANSWER_TIME,
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
class ClaimCitationAdmin(AnswerPartAdmin):
    ordering = ["-query__created_at", "segment"]
    list_display = [*_ANSWER_TIME, "segment", "reply_shown", "source_shown", "query"]
    list_select_related = ["query"]
    search_fields = ["reply_sentence", "source_sentence"]


@admin.register(RetrievalHit)
class RetrievalHitAdmin(AnswerPartAdmin):
    ordering = ["-query__created_at", "k_pos"]
    list_display = [
        *_ANSWER_TIME,
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
class ModelCallAdmin(AnswerPartAdmin):
    """Each request to a model and its reply as received, read-only."""

    ordering = ["-created_at", "attempt"]
    list_display = [
        "created_at",
        "call_latency",
        "query",
        "attempt",
        "provider",
        "model",
        "response_id",
    ]
    list_select_related = ["query"]
    list_filter = ["provider", "model"]
    search_fields = ["=query__id", "response_id"]

    @admin.display(description="latency", ordering="latency_ms")
    def call_latency(self, obj: ModelCall) -> str:
        return latency_label(obj.latency_ms)


@admin.register(ClaimCheck)
class ClaimCheckAdmin(AnswerPartAdmin):
    """Every claim of a model's reply and why it is, or is not, supported."""

    ordering = ["-query__created_at", "model_call", "sentence"]
    list_display = [*_ANSWER_TIME, "query", "sentence", "supported", "reason", "reply_shown"]
    list_select_related = ["query"]
    list_filter = ["supported", "reason"]
    search_fields = ["reply_sentence", "quote", "=query__id"]


@admin.register(ReasoningStep)
class ReasoningStepAdmin(AnswerPartAdmin):
    """The steps of answers worked through in steps, read-only."""

    ordering = ["-query__created_at", "step_number"]
    list_display = [
        *_ANSWER_TIME,
        "query",
        "step_number",
        "question",
        "outcome",
        "confidence_score",
    ]
    list_select_related = ["query"]
    list_filter = ["outcome", "proposed_by"]
    search_fields = ["question", "intermediate_answer", "=query__id"]


@admin.register(StepSourceAttribution)
class StepSourceAttributionAdmin(AnswerPartAdmin):
    """What each step cites, frozen at query time, read-only."""

    ordering = ["-query__created_at", "step", "id"]
    list_display = [
        *_ANSWER_TIME,
        "step",
        "quoted_as",
        "document_title",
        "chunk_index",
        "retrieval_rank",
        "relevance_score",
    ]
    list_select_related = ["step", "query"]
    search_fields = ["document_title", "excerpt", "=query__id"]


@admin.register(StepClaim)
class StepClaimAdmin(AnswerPartAdmin):
    ordering = ["-query__created_at", "step", "segment"]
    list_display = [*_ANSWER_TIME, "step", "segment", "reply_shown", "source_shown"]
    list_select_related = ["step", "query"]
    search_fields = ["reply_sentence", "=query__id"]


@admin.register(RagTrace)
class RagTraceAdmin(AnswerPartAdmin):
    ordering = ["-query__created_at", "seg"]
    list_display = [*_ANSWER_TIME, "ts", "qid", "seg", "lambda_state", "section_id", "rev"]
    list_select_related = ["query"]
    search_fields = ["qid", "line"]


from citations.responses import admin as responses_admin  # noqa: E402, F401 - responses
from citations.threads import admin as threads_admin  # noqa: E402, F401 - thread admins


@admin.register(AnswerFeedback)
class AnswerFeedbackAdmin(EvidenceAdmin):
    """Readers' verdicts on answers, as recorded (read-only: they are evidence)."""

    organization_path = "organization"
    list_display = ["created_at", "rating", "comment_short", "caller", "query", "organization"]
    ordering = ["-created_at"]
    list_filter = ["rating", ("organization", admin.RelatedOnlyFieldListFilter), "created_at"]
    list_select_related = ["query", "organization"]
    search_fields = ["comment", "caller", "=query__id"]
    date_hierarchy = "created_at"

    @admin.display(description="comment")
    def comment_short(self, obj: AnswerFeedback) -> str:
        return obj.comment[:120]
