"""Read-only, tenant-scoped admin of conversations: officers see every turn (the
deleted ones too, marked), the run that wrote an answer, the query execution
holding its evidence, and every deletion with who made it and why."""

from __future__ import annotations

from typing import cast

from django.contrib import admin

from citations.admin_columns import answer_label, elapsed_label
from citations.models import ConversationDeletion, Message, MessageRole, Run, Thread
from core.admin_scoping import EvidenceAdmin, ReadOnlyInline


def message_text(message: Message) -> str:
    """A turn as people read it: an assistant's answer without its quotes' Markdown
    (citations/presentation.py), anyone else's words as written."""
    if message.role == MessageRole.ASSISTANT:
        return answer_label(message.content)
    return message.content


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ["created_at", "role", "text", "run", "query", "deleted_at", "deleted_by"]
    readonly_fields = cast("list[str]", fields)  # the stubs widen fields to groups
    ordering = ["created_at", "id"]

    @admin.display(description="content")
    def text(self, obj: Message) -> str:
        return message_text(obj)


class RunInline(ReadOnlyInline):
    model = Run
    fk_name = "thread"
    fields = ["created_at", "status", "app", "query", "error_message"]
    readonly_fields = cast("list[str]", fields)  # the stubs widen fields to groups


@admin.register(Thread)
class ThreadAdmin(EvidenceAdmin):
    list_display = ["id", "created_at", "organization", "caller", "deleted_at", "deleted_by"]
    ordering = ["-created_at"]
    list_filter = [("organization", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["organization"]
    search_fields = ["=id"]
    date_hierarchy = "created_at"
    inlines = [MessageInline, RunInline]


@admin.register(Run)
class RunAdmin(EvidenceAdmin):
    organization_path = "thread__organization"
    list_display = ["id", "created_at", "latency", "thread", "app", "status", "query"]
    ordering = ["-created_at"]
    list_filter = ["status", ("app", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["thread", "app", "query"]
    search_fields = ["=id", "=thread__id", "=query__id"]
    date_hierarchy = "created_at"

    @admin.display(description="latency")
    def latency(self, obj: Run) -> str:
        """From the run's creation to its end, whichever end it had."""
        return elapsed_label(obj.created_at, obj.completed_at or obj.failed_at or obj.cancelled_at)


@admin.register(Message)
class MessageAdmin(EvidenceAdmin):
    organization_path = "thread__organization"
    list_display = ["created_at", "thread", "role", "text", "run", "query"]
    ordering = ["-created_at"]
    list_filter = ["role"]
    list_select_related = ["thread", "run", "query"]
    search_fields = ["content", "=thread__id", "=query__id"]
    date_hierarchy = "created_at"

    @admin.display(description="content", ordering="content")
    def text(self, obj: Message) -> str:
        return message_text(obj)


@admin.register(ConversationDeletion)
class ConversationDeletionAdmin(EvidenceAdmin):
    list_display = ["created_at", "kind", "record_id", "actor", "role", "origin", "reason"]
    ordering = ["-created_at"]
    list_filter = ["kind", ("organization", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["organization"]
    search_fields = ["=record_id", "=thread_id", "actor"]
    date_hierarchy = "created_at"
