"""Admin for organizations, data sources, file revisions, Markdown and chunks.

Everything the pipeline writes (hashes, Markdown, chunks, locations) is
read-only here; officers inspect it, actions call services. Every list is
scoped to the staff member's organizations.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from audit.events import document_event_record
from citations.selectors import quoted_spans_of
from core.admin_scoping import EvidenceAdmin, OrganizationScopedAdmin, ReadOnlyInline
from core.caller import client_address, client_user_agent
from core.markdown import markdown_html
from core.members import member_remove, staff_flag_sync
from documents.downloads import original_download_page
from documents.ingestion.requeue import file_retry, retry_can_help
from documents.member_admin import MemberInline, members_saved
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
from documents.reconversion import files_reconvert_outdated


@admin.register(Organization)
class OrganizationAdmin(OrganizationScopedAdmin):
    """The organization's page holds its members and their roles (documents.member_admin)."""

    organization_path = "pk"
    list_display = ["name", "id", "created_at"]
    search_fields = ["name"]
    inlines = [MemberInline]

    def get_inlines(self, request: HttpRequest, obj: Organization | None) -> list:
        return self.inlines if obj is not None else []  # members once it exists

    def save_formset(self, request: HttpRequest, form: object, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        members_saved(request, formset)


@admin.register(OrganizationMember)
class OrganizationMemberAdmin(OrganizationScopedAdmin):
    list_display = ["user", "organization", "role"]
    list_filter = ["role"]
    list_select_related = ["user", "organization"]

    def save_model(
        self, request: HttpRequest, obj: OrganizationMember, form: object, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        staff_flag_sync(obj.user)

    def delete_model(self, request: HttpRequest, obj: OrganizationMember) -> None:
        member_remove(member=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for member in queryset.select_related("user"):
            member_remove(member=member)


@admin.register(ApiKey)
class ApiKeyAdmin(OrganizationScopedAdmin):
    """Keys named by their prefix; the hash is never shown, to any role: it is what a
    stolen copy of the page would be tried against, and no one needs it to tell
    keys apart."""

    list_display = [
        "prefix",
        "name",
        "role",
        "organization",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_select_related = ["organization"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    fields = [
        "organization",
        "name",
        "role",
        "prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are shown once: made by `manage.py create_api_key`

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        """A key stays with the organization it was made for: it can be named or revoked."""
        return [*self.readonly_fields, "organization"]


@admin.register(DataSource)
class DataSourceAdmin(OrganizationScopedAdmin):
    list_display = ["name", "organization", "vector_database", "created_at"]
    list_select_related = ["organization", "vector_database"]
    search_fields = ["name"]


@admin.register(File)
class FileAdmin(EvidenceAdmin):
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
        "deleted_at",
        "created_at",
    ]
    list_filter = [
        "status",
        "kind",
        ("organization", admin.RelatedOnlyFieldListFilter),
        ("data_source", admin.RelatedOnlyFieldListFilter),
    ]
    list_select_related = ["data_source", "organization"]
    search_fields = ["name", "sha256", "=id"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in File._meta.fields] + ["download"]
    actions = ["retry_failed", "convert_again"]

    def get_urls(self) -> list:
        download = self.admin_site.admin_view(self.download_view)
        return [
            path("<uuid:file_id>/download/", download, name="documents_file_download"),
            *super().get_urls(),
        ]

    def download_view(
        self, request: HttpRequest, file_id: str
    ) -> HttpResponse | StreamingHttpResponse:
        """The original bytes for an officer; the download is itself recorded."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        record = get_object_or_404(self.get_queryset(request), pk=file_id)
        document_event_record(
            kind="download",
            file=record,
            user=cast(User, request.user),  # the admin site lets only signed-in staff in
            origin=client_address(request),
            user_agent=client_user_agent(request),
        )
        return original_download_page(record, where="an admin download")

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
        url = reverse("admin:documents_file_download", args=[obj.pk])
        return format_html(
            '<a href="{}">download original ({} bytes, sha256 {})</a>', url, obj.size, obj.sha256
        )

    def has_reingest_permission(self, request: HttpRequest) -> bool:
        """Officers only read; running files through ingestion again is an operator's."""
        return request.user.has_perm("documents.reingest_file")

    @admin.action(
        description="Retry ingestion of the selected failed files", permissions=["reingest"]
    )
    def retry_failed(self, request: HttpRequest, queryset: QuerySet[File]) -> None:
        failed = list(queryset.filter(status=FileStatus.FAILED))
        hopeless = [record for record in failed if not retry_can_help(record)]
        for record in failed:
            if record not in hopeless:
                file_retry(
                    file=record,
                    user=cast(User, request.user),  # the admin site lets only signed-in staff in
                    origin=client_address(request),
                    user_agent=client_user_agent(request),
                )
        queued = len(failed) - len(hopeless)
        level = messages.SUCCESS if queued else messages.WARNING
        note = (
            f"; {len(hopeless)} not: the current converter refuses their bytes for good "
            "(upload corrected files)"
            if hopeless
            else ""
        )
        self.message_user(request, f"{queued} file(s) queued again{note}", level)

    @admin.action(
        description="Convert the selected files again with the current converter",
        permissions=["reingest"],
    )
    def convert_again(self, request: HttpRequest, queryset: QuerySet[File]) -> None:
        """What ``manage.py reconvert`` does, for the selected files: only ready ones
        whose Markdown an older converter version produced."""
        queued = files_reconvert_outdated(
            files=queryset,
            why="admin action",
            user=cast(User, request.user),  # the admin site lets only signed-in staff in
            origin=client_address(request),
            user_agent=client_user_agent(request),
        )
        unchanged = queryset.count() - queued
        note = f"; {unchanged} left alone (already current, not ready, or superseded)"
        self.message_user(
            request,
            f"{queued} file(s) queued to convert again{note if unchanged else ''}",
            messages.SUCCESS if queued else messages.WARNING,
        )


@admin.register(DocumentMarkdown)
class DocumentMarkdownAdmin(EvidenceAdmin):
    organization_path = "file__organization"
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
        return super().get_queryset(request).defer("line_pages")


class LocationInline(ReadOnlyInline):
    model = Location
    fields = [
        "ordinal",
        "page_number",
        "line_number_start",
        "line_number_end",
        "char_start",
        "char_end",
        "hierarchy",
        "boxes",
    ]
    readonly_fields = cast("list[str]", fields)  # the stubs widen fields to groups


@admin.register(Chunk)
class ChunkAdmin(EvidenceAdmin):
    list_display = [
        "id",
        "file",
        "position",
        "section",
        "page_start",
        "line_number_start",
        "line_number_end",
        "token_count",
        "is_retrievable",
    ]
    list_select_related = ["file"]
    search_fields = ["chunk_text", "file__name", "=id"]
    list_filter = [
        ("organization", admin.RelatedOnlyFieldListFilter),
        ("data_source", admin.RelatedOnlyFieldListFilter),
        "is_retrievable",
    ]
    inlines = [LocationInline]
    exclude = ["embedding"]
    readonly_fields = [
        "file_link", "rendered", "content_hash", "char_start", "char_end", "hierarchy",
    ]  # fmt: skip

    @admin.display(description="as a reader sees it (quoted sentences marked)")
    def rendered(self, obj: Chunk) -> str:
        """The chunk's Markdown rendered and sanitised, as the reading pages show it,
        each sentence an answer quoted from it marked; the stored text stays in its
        own field, byte for byte."""
        quoted = quoted_spans_of(chunk_id=obj.pk)
        return format_html(
            '<div class="rendered-markdown">{}</div>', markdown_html(obj.chunk_text, quoted)
        )

    @admin.display(description="file revision")
    def file_link(self, obj: Chunk) -> str:
        url = reverse("admin:documents_file_change", args=[obj.file_id])
        return format_html('<a href="{}">{}</a>', url, obj.file)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return super().get_queryset(request).defer("embedding")
