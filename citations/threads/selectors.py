"""Reads of threads, messages and runs, always scoped to the caller's organization
and to the threads its role reaches (core.roles ``Reach``: a viewer's own, every
thread for a role that audits), plus the conversation context a follow-up question
is searched with. A deleted thread or message is not found."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet, Sum

from citations.llm_apps import app_find, app_visible_to
from citations.models import App, Message, MessageRole, Run, Thread
from citations.threads.errors import ThreadRejected
from core.pagination import Page as Page
from core.pagination import page_of as page_of
from core.permissions import Reader
from core.roles import Reach
from documents.models import Organization

CONTEXT_QUESTIONS = 2
CONTEXT_MAX_CHARS = 400  # the embedder reads ~256 tokens: leave room for the question itself


def _not_found(kind: str, raw_id: object) -> ThreadRejected:
    return ThreadRejected(
        f"No {kind} found with id '{raw_id}'.",
        code="not_found",
        status=404,
        param=f"{kind}_id",
    )


def _uuid(raw: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


def thread_get(
    *, organization: Organization, thread_id: str, reader: Reader, reach: Reach
) -> Thread:
    """The thread if it belongs to ``organization`` and ``reader`` reaches it under
    ``reach``; another tenant's thread, or one out of reach, is not found."""
    key = _uuid(thread_id)
    threads = Thread.objects.filter(organization=organization, deleted_at__isnull=True)
    thread = threads.filter(reader.reachable(reach), pk=key).first() if key else None
    if thread is None:
        raise _not_found("thread", thread_id)
    return thread


def message_get(*, thread: Thread, message_id: str) -> Message:
    key = _uuid(message_id)
    message = messages_of(thread=thread).filter(pk=key).first() if key else None
    if message is None:
        raise _not_found("message", message_id)
    return message


def run_get(*, thread: Thread, run_id: str) -> Run:
    key = _uuid(run_id)
    run = runs_of(thread=thread).filter(pk=key).first() if key else None
    if run is None:
        raise _not_found("run", run_id)
    return run


def assistant_get(*, organization: Organization, assistant_id: object) -> App:
    """The app named by ``assistant_id``, if the caller may use it."""
    app = app_find(app_id=str(assistant_id))
    if app is None or not app_visible_to(app=app, organization=organization):
        raise _not_found("assistant", assistant_id)
    return app


def messages_of(*, thread: Thread) -> QuerySet[Message]:
    return Message.objects.filter(thread=thread, deleted_at__isnull=True).select_related("run")


def runs_of(*, thread: Thread) -> QuerySet[Run]:
    """Runs with the tokens their model calls spent (``usage``), in one query."""
    return (
        Run.objects.filter(thread=thread)
        .select_related("app")
        .annotate(
            prompt_tokens=Sum("query__model_calls__input_tokens"),
            completion_tokens=Sum("query__model_calls__output_tokens"),
        )
    )


def latest_user_message(*, thread: Thread) -> Message | None:
    return (
        Message.objects.filter(thread=thread, role=MessageRole.USER, deleted_at__isnull=True)
        .order_by("-created_at", "-id")
        .first()
    )


def retrieval_context(*, question: Message) -> str:
    """What a follow-up is searched with besides its own words: the previous user
    questions and the sections the latest answer cited ("its" → that policy)."""
    earlier = list(
        Message.objects.filter(
            thread_id=question.thread_id,
            created_at__lt=question.created_at,
            deleted_at__isnull=True,
        )
        .order_by("-created_at", "-id")
        .only("role", "content", "sources")[:20]
    )
    questions = [m.content for m in earlier if m.role == MessageRole.USER][:CONTEXT_QUESTIONS]
    answer = next((m for m in earlier if m.role == MessageRole.ASSISTANT), None)
    sections = []
    for source in answer.sources if answer else []:
        if source.get("quoted_as") and source["section"] not in sections:
            sections.append(source["section"])
    parts = [q[: CONTEXT_MAX_CHARS // 2] for q in reversed(questions)] + sections
    return "\n".join(parts)[-CONTEXT_MAX_CHARS:]
