"""Threads, messages and runs: the conversational API's writes.

A run is a status row written before the work (see ``RunStatus`` for the
transitions); the worker claims it with a conditional UPDATE, answers the
thread's latest user message through ``query_execute`` (so every thread answer
leaves the same audit records as any other query) and posts the assistant
message in the same transaction that completes the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from citations.deletions import conversation_delete
from citations.generators import ModelError
from citations.models import (
    App,
    ConversationDeletion,
    Message,
    MessageRole,
    QueryExecution,
    Run,
    RunStatus,
    Thread,
)
from citations.services.execution import query_execute
from citations.services.questions import MAX_QUESTION_CHARS, QueryRejected
from citations.services.searching import IndexMismatch
from citations.threads import selectors
from citations.threads.errors import ThreadRejected
from citations.threads.sources import annotations_of, sources_of
from core.caller import Caller
from core.user_agents import user_agent_clean
from documents.models import ApiKey, Organization

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = MAX_QUESTION_CHARS
MAX_METADATA_KEYS = 16
MAX_INITIAL_MESSAGES = 32


def metadata_clean(metadata: object, *, param: str = "metadata") -> dict[str, str]:
    """OpenAI's metadata rules: ≤16 string keys of ≤64 chars, string values of ≤512."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or len(metadata) > MAX_METADATA_KEYS:
        raise ThreadRejected(
            "metadata must be an object with at most 16 keys", code="invalid_metadata", param=param
        )
    for key, value in metadata.items():
        if (
            not isinstance(key, str)
            or len(key) > 64
            or not isinstance(value, str)
            or len(value) > 512
        ):
            raise ThreadRejected(
                "metadata keys must be strings of at most 64 characters and values strings "
                "of at most 512 characters",
                code="invalid_metadata",
                param=param,
            )
    return dict(metadata)


def content_clean(content: object, *, param: str = "content") -> str:
    """A message's text: a string, or a list of ``{"type": "text", "text": …}`` parts."""
    if isinstance(content, list):
        if not all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
            raise ThreadRejected(
                "only text content parts are supported", code="unsupported_content", param=param
            )
        if not all(isinstance(p.get("text"), str) for p in content):
            raise ThreadRejected(
                "a text part needs a 'text' string", code="invalid_content", param=param
            )
        content = "\n".join(p["text"] for p in content)
    if not isinstance(content, str):
        raise ThreadRejected(
            "content must be a string or a list of text parts", code="invalid_content", param=param
        )
    text = content.strip()
    if not text:
        raise ThreadRejected("content must not be empty", code="empty_content", param=param)
    if len(text) > MAX_MESSAGE_CHARS:
        raise ThreadRejected(
            f"content is longer than {MAX_MESSAGE_CHARS} characters",
            code="content_too_long",
            param=param,
        )
    return text


def role_clean(role: object, *, param: str = "role") -> str:
    if role not in MessageRole.values:
        raise ThreadRejected("role must be 'user' or 'assistant'", code="invalid_role", param=param)
    return str(role)


def _lock(thread: Thread) -> Thread:
    """Serialise writers of one thread, so 'one active run' holds under concurrency."""
    return Thread.objects.select_for_update().get(pk=thread.pk)


def _refuse_if_busy(thread: Thread, action: str) -> None:
    active = thread.runs.filter(status__in=Run.ACTIVE).order_by("created_at").first()
    if active is not None:
        raise ThreadRejected(
            f"Can't {action} thread {thread.pk} while run {active.pk} is active.",
            code="run_active",
            param="thread_id",
        )


def _field(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _message_add(thread: Thread, item: object, param: str) -> Message:
    if not isinstance(item, Mapping):
        raise ThreadRejected("a message must be an object", code="invalid_message", param=param)
    return Message.objects.create(
        thread=thread,
        role=role_clean(item.get("role"), param=_field(param, "role")),
        content=content_clean(item.get("content"), param=_field(param, "content")),
        metadata=metadata_clean(item.get("metadata"), param=_field(param, "metadata")),
    )


def _messages_add(thread: Thread, items: object, param: str) -> None:
    if items is None:
        return
    if not isinstance(items, list) or len(items) > MAX_INITIAL_MESSAGES:
        raise ThreadRejected(
            f"{param} must be a list of at most {MAX_INITIAL_MESSAGES} messages",
            code="invalid_messages",
            param=param,
        )
    for index, item in enumerate(items):
        _message_add(thread, item, f"{param}[{index}]")


@transaction.atomic
def thread_create(
    *,
    organization: Organization,
    metadata: object = None,
    messages: object = None,
    caller: str = "",
    user: Any = None,
    api_key: ApiKey | None = None,
) -> Thread:
    """A new thread of ``organization``, optionally with initial messages, owned by
    ``api_key`` or else ``user`` (who reaches it: core.roles ``Reach``)."""
    thread = Thread.objects.create(
        organization=organization,
        metadata=metadata_clean(metadata),
        caller=caller,
        caller_user=user if api_key is None and _signed_in(user) else None,
        caller_api_key=api_key,
    )
    _messages_add(thread, messages, "messages")
    return thread


def _signed_in(user: Any) -> bool:
    return user is not None and bool(getattr(user, "is_authenticated", False))


@transaction.atomic
def thread_delete(*, thread: Thread, caller: Caller, role: str | None, reason: str = "") -> None:
    """Hide ``thread`` (and so its messages and runs) from the API; refused while a run
    answers in it. The rows stay for audit; the deletion is chained evidence."""
    thread = _lock(thread)
    _refuse_if_busy(thread, "delete")
    kind = ConversationDeletion.Kind.THREAD
    conversation_delete(record=thread, kind=kind, caller=caller, role=role, reason=reason)


@transaction.atomic
def message_delete(*, message: Message, caller: Caller, role: str | None, reason: str = "") -> None:
    """Hide one message of a thread; refused while a run answers in it (its question
    must stay what it answers). The row stays; the deletion is chained evidence."""
    _refuse_if_busy(_lock(message.thread), "delete messages of")
    conversation_delete(
        record=message,
        kind=ConversationDeletion.Kind.MESSAGE,
        caller=caller,
        role=role,
        reason=reason,
        thread_id=message.thread_id,
    )


@transaction.atomic
def message_create(
    *, thread: Thread, role: object, content: object, metadata: object = None
) -> Message:
    """Add a message; refused while a run is answering, as OpenAI does, so turns stay in order."""
    thread = _lock(thread)
    _refuse_if_busy(thread, "add messages to")
    return _message_add(thread, {"role": role, "content": content, "metadata": metadata}, "")


def _instructions(app: App, instructions: object, additional: object) -> str:
    for name, value in (("instructions", instructions), ("additional_instructions", additional)):
        if value is not None and not isinstance(value, str):
            raise ThreadRejected(
                f"{name} must be a string", code="invalid_instructions", param=name
            )
    base = instructions if isinstance(instructions, str) else app.prompt
    extra = additional if isinstance(additional, str) else ""  # else None (checked above)
    return "\n\n".join(part for part in (base, extra) if part)


@transaction.atomic
def run_create(
    *,
    thread: Thread,
    app: App,
    user: Any = None,
    api_key: ApiKey | None = None,
    caller_address: str | None = None,
    user_agent: str | None = None,
    instructions: object = None,
    additional_instructions: object = None,
    additional_messages: object = None,
    metadata: object = None,
) -> Run:
    """Queue a run answering the thread's latest user message; the worker does the work
    (and records the answer as asked from ``caller_address`` with ``user_agent``)."""
    thread = _lock(thread)
    _refuse_if_busy(thread, "create a run on")
    _messages_add(thread, additional_messages, "additional_messages")
    question = selectors.latest_user_message(thread=thread)
    if question is None:
        raise ThreadRejected(
            "the thread has no user message to answer", code="no_user_message", param="thread_id"
        )
    run = Run.objects.create(
        thread=thread,
        app=app,
        question=question,
        instructions=_instructions(app, instructions, additional_instructions),
        metadata=metadata_clean(metadata),
        caller_user=user if user is not None and user.is_authenticated else None,
        caller_api_key=api_key,
        caller_address=caller_address or None,
        caller_user_agent=user_agent_clean(user_agent),
    )
    from citations.threads.tasks import run_execute as task  # the task module imports this one

    transaction.on_commit(lambda: task.delay(str(run.pk)))
    return run


def run_cancel(*, run: Run) -> Run:
    """queued → cancelled at once; in_progress → cancelling (the worker finishes it)."""
    now = timezone.now()
    if Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELLED, cancelled_at=now
    ) or Run.objects.filter(pk=run.pk, status=RunStatus.IN_PROGRESS).update(
        status=RunStatus.CANCELLING
    ):
        run.refresh_from_db()
        return run
    run.refresh_from_db()
    if run.status == RunStatus.CANCELLING:
        return run
    raise ThreadRejected(
        f"Cannot cancel run with status '{run.status}'.",
        code="run_not_cancellable",
        param="run_id",
    )


def _claim(run_id: str) -> bool:
    """queued → in_progress, or re-claim a run whose worker died past the task time limit."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    return bool(
        Run.objects.filter(
            Q(status=RunStatus.QUEUED) | Q(status=RunStatus.IN_PROGRESS, started_at__lt=stale),
            pk=run_id,
        ).update(status=RunStatus.IN_PROGRESS, started_at=now)
    )


def run_execute(*, run_id: str) -> None:
    """Answer the run's question with its app; a run that is not claimable is left alone."""
    if not _claim(run_id):
        return
    run = Run.objects.select_related("app", "question", "caller_api_key", "caller_user").get(
        pk=run_id
    )
    try:
        execution = query_execute(
            app=run.app,
            question=run.question.content,
            user=run.caller_user,
            api_key=run.caller_api_key,
            origin="thread",
            caller_address=run.caller_address,
            user_agent=run.caller_user_agent,
            retrieval_context=selectors.retrieval_context(question=run.question),
            instructions=run.instructions or None,
        )
    except QueryRejected as exc:
        run_fail(run_id=run_id, code="invalid_prompt", message=exc.message)
        return
    except IndexMismatch as exc:  # the query execution is recorded failed with the reason
        run_fail(run_id=run_id, code="server_error", message=f"{exc.code}: {exc.message}")
        return
    except ModelError as exc:  # the query execution is recorded failed with the reason
        code = "rate_limit_exceeded" if exc.code == "model_rate_limited" else "server_error"
        run_fail(run_id=run_id, code=code, message=f"{exc.code}: {exc.message}")
        return
    _run_finish(run, execution)


def run_release(*, run_id: str) -> None:
    """in_progress → queued, so a retry after a transient error can claim it again."""
    Run.objects.filter(pk=run_id, status=RunStatus.IN_PROGRESS).update(
        status=RunStatus.QUEUED, started_at=None
    )


def run_fail(*, run_id: str, code: str, message: str) -> None:
    """in_progress → failed; a run being cancelled ends cancelled instead."""
    now = timezone.now()
    updated = Run.objects.filter(pk=run_id, status=RunStatus.IN_PROGRESS).update(
        status=RunStatus.FAILED, error_code=code, error_message=message[:2000], failed_at=now
    )
    if not updated:
        Run.objects.filter(pk=run_id, status=RunStatus.CANCELLING).update(
            status=RunStatus.CANCELLED, cancelled_at=now
        )


@transaction.atomic
def _run_finish(run: Run, execution: QueryExecution) -> None:
    now = timezone.now()
    completed = Run.objects.filter(pk=run.pk, status=RunStatus.IN_PROGRESS).update(
        status=RunStatus.COMPLETED, query=execution, completed_at=now
    )
    if not completed:  # cancelled meanwhile: keep the audit link, post nothing
        Run.objects.filter(pk=run.pk, status=RunStatus.CANCELLING).update(
            status=RunStatus.CANCELLED, query=execution, cancelled_at=now
        )
        return
    sources = sources_of(execution=execution)
    Message.objects.create(
        thread_id=run.thread_id,
        role=MessageRole.ASSISTANT,
        content=execution.answer,
        annotations=annotations_of(execution=execution),
        sources=sources,
        metadata=_message_metadata(execution, sources),
        app=run.app,
        run=run,
        query=execution,
    )


def _message_metadata(execution: QueryExecution, sources: Iterable[dict]) -> dict[str, str]:
    databases = sorted({s["database_id"] for s in sources})
    return {
        "query_id": str(execution.pk),
        "llm_app_id": str(execution.app_id),
        "database_id": ",".join(databases)[:512],
    }


def runs_resume_stalled() -> list[str]:
    """Re-queue runs whose message was lost (queued a while) or whose worker died
    (in progress past the task time limit); the claim keeps each answered once."""
    from citations.threads.tasks import run_execute as task

    now = timezone.now()
    waited = now - timedelta(seconds=settings.PROVENANCE_INGEST_LEASE_SECONDS)
    dead = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    stalled = Run.objects.filter(
        Q(status=RunStatus.QUEUED, created_at__lt=waited)
        | Q(status=RunStatus.IN_PROGRESS, started_at__lt=dead)
    ).values_list("pk", flat=True)
    run_ids = [str(pk) for pk in stalled]
    for run_id in run_ids:
        task.delay(run_id)
    return run_ids
