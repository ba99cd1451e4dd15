"""The audit trail in the admin: chain entries and document events, read-only."""

from __future__ import annotations

from django.contrib import admin

from audit.models import DocumentEvent, EvidenceEntry
from core.admin_scoping import EvidenceAdmin


@admin.register(EvidenceEntry)
class EvidenceEntryAdmin(EvidenceAdmin):
    organization_path = "organization_id"
    list_display = ["seq", "record_table", "record_id", "entry_hash", "key_id", "created_at"]
    list_filter = ["record_table"]
    search_fields = ["=record_id", "=entry_hash"]
    date_hierarchy = "created_at"


@admin.register(DocumentEvent)
class DocumentEventAdmin(EvidenceAdmin):
    list_display = ["created_at", "kind", "file", "actor", "origin", "reason"]
    list_filter = ["kind", ("organization", admin.RelatedOnlyFieldListFilter), "created_at"]
    list_select_related = ["file"]
    search_fields = ["file__name", "actor", "reason"]
    date_hierarchy = "created_at"
