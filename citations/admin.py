"""Admin for apps and, read-only, the evidence of every answer."""

from __future__ import annotations

from django.contrib import admin

from citations.models import (
    App,
    ClaimCitation,
    QueryExecution,
    QuotedSource,
    RagTrace,
    RetrievalHit,
)
from documents.admin import ReadOnlyAdmin


@admin.register(App)
class AppAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "is_public", "generator", "top_k", "created_at"]
    list_filter = ["organization", "is_public", "generator"]
    list_select_related = ["organization"]
    filter_horizontal = ["data_sources"]
    search_fields = ["name", "=id"]


class QuotedSourceInline(admin.TabularInline):
    model = QuotedSource
    extra = 0
    can_delete = False
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
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False


class ClaimInline(admin.TabularInline):
    model = ClaimCitation
    extra = 0
    can_delete = False
    fields = ["segment", "reply_sentence", "source_sentence", "relevance"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False


class HitInline(admin.TabularInline):
    model = RetrievalHit
    extra = 0
    can_delete = False
    fields = [
        "k_pos",
        "k_final",
        "retriever_type",
        "score_raw",
        "score_norm",
        "section",
        "file_revision",
    ]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False


@admin.register(QueryExecution)
class QueryExecutionAdmin(ReadOnlyAdmin):
    list_display = [
        "question",
        "app",
        "organization",
        "caller",
        "status",
        "validator_status",
        "latency_ms",
        "created_at",
    ]
    list_filter = ["status", "validator_status", "organization", "app", "origin"]
    list_select_related = ["app", "organization"]
    search_fields = ["question", "answer", "=id"]
    date_hierarchy = "created_at"
    inlines = [QuotedSourceInline, ClaimInline, HitInline]


@admin.register(RagTrace)
class RagTraceAdmin(ReadOnlyAdmin):
    list_display = ["ts", "qid", "seg", "lambda_state", "section_id", "rev"]
    search_fields = ["qid", "line"]
