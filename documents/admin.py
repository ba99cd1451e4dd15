"""Admin for organizations, data sources, file revisions, Markdown and chunks.

Everything the pipeline writes (hashes, Markdown, chunks, locations) is
read-only here; officers inspect it, actions call services.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from documents import ingestion
from documents.models import (
    ApiKey,
    Chunk,
    DataSource,
    DocumentMarkdown,
    File,
    FileStatus,
    Location,
    Organization,
    OrganizationMember,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """System-written records: viewable, never added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "created_at"]
    search_fields = ["name"]


@admin.register(OrganizationMember)
class OrganizationMemberAdmin(admin.ModelAdmin):
    list_display = ["user", "organization"]
    list_select_related = ["user", "organization"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "organization", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["organization"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    fields = [
        "organization",
        "name",
        "prefix",
        "key_hash",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are shown once: made by `manage.py create_api_key`


@admin.register(DataSource)
class DataSourceAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "vector_database", "created_at"]
    list_select_related = ["organization", "vector_database"]
    search_fields = ["name"]


@admin.register(File)
class FileAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "revision",
        "status_badge",
        "progress",
        "kind",
        "size",
        "data_source",
        "organization",
        "is_current",
        "created_at",
    ]
    list_filter = ["status", "kind", "organization", "data_source"]
    list_select_related = ["data_source", "organization"]
    search_fields = ["name", "sha256", "=id"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in File._meta.fields] + ["download"]
    actions = ["retry_failed"]

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: File) -> str:
        return format_html("<b>{}</b>", obj.status) if obj.status == "failed" else obj.status

    @admin.display(description="progress")
    def progress(self, obj: File) -> str:
        return f"{obj.progress_done}/{obj.progress_total}"

    @admin.display(boolean=True, description="current")
    def is_current(self, obj: File) -> bool:
        return obj.is_current

    @admin.display(description="original")
    def download(self, obj: File) -> str:
        return format_html(
            '<a href="{}">download original</a>', reverse("file-content", args=[obj.pk])
        )

    @admin.action(description="Retry ingestion of the selected failed files")
    def retry_failed(self, request: HttpRequest, queryset: QuerySet[File]) -> None:
        failed = queryset.filter(status=FileStatus.FAILED)
        for record in failed:
            ingestion.file_retry(file=record)
        self.message_user(request, f"{failed.count()} file(s) queued again", messages.SUCCESS)


@admin.register(DocumentMarkdown)
class DocumentMarkdownAdmin(ReadOnlyAdmin):
    list_display = [
        "file",
        "converter",
        "converter_version",
        "is_active",
        "page_count",
        "created_at",
        "published_at",
    ]
    list_select_related = ["file"]
    list_filter = ["converter", "is_active"]
    search_fields = ["file__name"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DocumentMarkdown]:
        return super().get_queryset(request).defer("markdown", "line_pages")


class LocationInline(admin.TabularInline):
    model = Location
    extra = 0
    can_delete = False
    fields = [
        "ordinal",
        "page_number",
        "line_number_start",
        "line_number_end",
        "char_start",
        "char_end",
        "hierarchy",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "file",
        "position",
        "section",
        "page_start",
        "line_number_start",
        "line_number_end",
        "token_count",
    ]
    list_select_related = ["file"]
    search_fields = ["chunk_text", "file__name", "=id"]
    list_filter = ["vector_database"]
    inlines = [LocationInline]
    exclude = ["embedding"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return super().get_queryset(request).defer("embedding")
