"""Read-only, tenant-scoped admin of the Responses API's answers, newest first."""

from __future__ import annotations

from django.contrib import admin

from citations.admin_columns import elapsed_label
from citations.models import ResponseRecord
from core.admin_scoping import EvidenceAdmin


@admin.register(ResponseRecord)
class ResponseRecordAdmin(EvidenceAdmin):
    list_display = [
        "question_short",
        "created_at",
        "latency",
        "status",
        "app",
        "organization",
        "query",
        "deleted_at",
        "deleted_by",
    ]
    ordering = ["-created_at"]
    list_filter = [
        "status",
        ("organization", admin.RelatedOnlyFieldListFilter),
        ("app", admin.RelatedOnlyFieldListFilter),
    ]
    list_select_related = ["app", "organization", "query"]
    search_fields = ["question", "=id", "=query__id"]
    date_hierarchy = "created_at"

    @admin.display(description="question", ordering="question")
    def question_short(self, obj: ResponseRecord) -> str:
        return obj.question[:90]

    @admin.display(description="latency")
    def latency(self, obj: ResponseRecord) -> str:
        return elapsed_label(obj.created_at, obj.completed_at)
