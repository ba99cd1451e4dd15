"""The audit trail in the admin: chain entries and document events, read-only."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.http import HttpRequest
from django.utils.html import format_html

from audit.descriptions import entries_described
from audit.models import DocumentEvent, EvidenceEntry
from core.admin_scoping import EvidenceAdmin
from core.user_agents import user_agent_short


class DescribedChangeList(ChangeList):
    """Entries of a page described together, in a few queries (audit/descriptions.py)."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        described = entries_described(self.result_list)
        for entry in self.result_list:
            entry.described = described[entry.seq]


@admin.register(EvidenceEntry)
class EvidenceEntryAdmin(EvidenceAdmin):
    organization_path = "organization_id"
    list_display = ["seq", "created_at", "about", "record_table", "entry_hash", "key_id"]
    ordering = ["-seq"]
    list_filter = ["record_table"]
    search_fields = ["=record_id", "=entry_hash"]
    date_hierarchy = "created_at"
    readonly_fields = ["about"]

    def get_changelist(self, request: HttpRequest, **kwargs: object) -> type[ChangeList]:
        return DescribedChangeList

    @admin.display(description="what it records")
    def about(self, obj: EvidenceEntry) -> str:
        """The entry in plain words, linked to the record it is about."""
        described = getattr(obj, "described", None) or entries_described([obj])[obj.seq]
        if not described.url:
            return described.text
        return format_html('<a href="{}">{}</a>', described.url, described.text)


@admin.register(DocumentEvent)
class DocumentEventAdmin(EvidenceAdmin):
    """Who did what to which document, from which address and client; the agent is the
    client's own words, shown as text (the admin escapes it)."""

    list_display = ["created_at", "kind", "file", "actor", "origin", "agent", "reason"]
    list_filter = ["kind", ("organization", admin.RelatedOnlyFieldListFilter), "created_at"]
    list_select_related = ["file"]
    search_fields = ["file__name", "actor", "reason", "=origin", "user_agent"]
    date_hierarchy = "created_at"

    @admin.display(description="user agent", ordering="user_agent")
    def agent(self, obj: DocumentEvent) -> str:
        return user_agent_short(obj.user_agent)
