"""Conversations on the answer pages: a follow-up continues the thread of the
answer it follows, through the threads API's own services and selectors, so it
is searched with the earlier turns exactly as a thread run would be.

A question asked on the Ask page has no thread until its first follow-up: the
thread is then made from that question and its answer (linked to its query
execution, as a run's message is).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from citations.models import Message, MessageRole, QueryExecution, Thread
from citations.services.execution import query_execute
from citations.threads import selectors as thread_selectors
from citations.threads.services import message_create, thread_create
from citations.threads.sources import annotations_of, sources_of


def _assistant_post(thread: Thread, execution: QueryExecution) -> Message:
    return Message.objects.create(
        thread=thread,
        role=MessageRole.ASSISTANT,
        content=execution.answer,
        annotations=annotations_of(execution=execution),
        sources=sources_of(execution=execution),
        metadata={"query_id": str(execution.pk), "origin": "web"},
        app=execution.app,
        query=execution,
    )


def thread_of(*, execution: QueryExecution) -> Thread | None:
    message = (
        Message.objects.filter(
            query=execution, role=MessageRole.ASSISTANT, thread__deleted_at__isnull=True
        )
        .select_related("thread")
        .first()
    )
    return message.thread if message else None


@transaction.atomic
def conversation_thread(*, execution: QueryExecution, user: User) -> Thread:
    """The thread ``execution`` answered in; an answer ``user`` asked on its own starts
    one, theirs."""
    thread = thread_of(execution=execution)
    if thread is not None:
        return thread
    thread = thread_create(
        organization=execution.organization,
        metadata={"origin": "web"},
        messages=[{"role": MessageRole.USER, "content": execution.question}],
        caller=execution.caller,
        user=user,
    )
    _assistant_post(thread, execution)
    return thread


def follow_up_ask(
    *,
    previous: QueryExecution,
    question: str,
    user: User,
    caller_address: str | None = None,
    user_agent: str | None = None,
) -> QueryExecution:
    """Ask ``question`` after ``previous`` in the same thread, searched with the
    earlier turns (``retrieval_context``), recorded as asked from ``caller_address``
    with ``user_agent``; raises ``ThreadRejected`` (bad message) or
    ``QueryRejected``/``ModelError`` as ``query_execute`` does."""
    thread = conversation_thread(execution=previous, user=user)
    message = message_create(thread=thread, role=MessageRole.USER, content=question)
    execution = query_execute(
        app=previous.app,
        question=message.content,
        user=user,
        origin="web",
        caller_address=caller_address,
        user_agent=user_agent,
        retrieval_context=thread_selectors.retrieval_context(question=message),
    )
    _assistant_post(thread, execution)
    return execution


def earlier_turns(*, execution: QueryExecution) -> list[QueryExecution]:
    """The answers given before ``execution`` in its thread, oldest first."""
    thread = thread_of(execution=execution)
    if thread is None:
        return []
    answered = (
        Message.objects.filter(thread=thread, role=MessageRole.ASSISTANT, query__isnull=False)
        .exclude(query=execution)
        .filter(created_at__lt=Message.objects.filter(query=execution).values("created_at")[:1])
        .order_by("created_at", "id")
        .values_list("query_id", flat=True)
    )
    by_id = QueryExecution.objects.in_bulk(list(answered))
    return [by_id[pk] for pk in answered if pk in by_id]
