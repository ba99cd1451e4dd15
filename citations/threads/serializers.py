"""The OpenAI Assistants wire format of threads, messages and runs; the list
parameters (``limit``, ``order``, ``after``, ``before``) are ``core.pagination``'s."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db.models import Sum

from citations.models import Message, MessageRole, Run, RunStatus, Thread
from core.pagination import ListParams as ListParams
from core.pagination import list_output as list_output
from core.pagination import list_params as list_params

SOURCE_TRACING_OBJECT = "source_tracing"


def _unix(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


def thread_output(thread: Thread) -> dict[str, Any]:
    return {
        "id": str(thread.pk),
        "object": "thread",
        "created_at": _unix(thread.created_at),
        "metadata": thread.metadata,
        "tool_resources": {},
    }


def _text(value: str, annotations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "text", "text": {"value": value, "annotations": annotations}}


_URL_FIELDS = ("chunk_url", "file_url")


def source_tracing_block(message: Message, absolute: Callable[[str], str] = str) -> dict[str, Any]:
    """The retrieved chunks' source-tracing fields, as a second text block holding JSON,
    so the answer block stays exactly what the annotations index into. URLs are
    stored as paths and answered made ``absolute`` for the host the caller used, as
    every other URL of the API is."""
    chunks = [
        {
            key: absolute(value) if key in _URL_FIELDS and value else value
            for key, value in c.items()
        }
        for c in message.sources
    ]
    body = {
        "object": SOURCE_TRACING_OBJECT,
        "query_id": str(message.query_id),
        "chunks": chunks,
    }
    return _text(json.dumps(body, ensure_ascii=False), [])


def message_output(message: Message, absolute: Callable[[str], str] = str) -> dict[str, Any]:
    """OpenAI's message object; ``absolute`` turns a path into the caller's URL."""
    content = [_text(message.content, message.annotations)]
    if message.query_id is not None:
        content.append(source_tracing_block(message, absolute))
    is_answer = message.role == MessageRole.ASSISTANT and message.run_id is not None
    return {
        "id": str(message.pk),
        "object": "thread.message",
        "created_at": _unix(message.created_at),
        "thread_id": str(message.thread_id),
        "status": "completed",
        "completed_at": _unix(message.created_at),
        "incomplete_at": None,
        "incomplete_details": None,
        "role": message.role,
        "content": content,
        "assistant_id": str(message.app_id) if is_answer else None,
        "run_id": str(message.run_id) if message.run_id else None,
        "attachments": [],
        "metadata": message.metadata,
    }


def _last_error(run: Run) -> dict[str, str] | None:
    if run.status != RunStatus.FAILED:
        return None
    return {"code": run.error_code or "server_error", "message": run.error_message}


def _usage(run: Run) -> dict[str, int]:
    """The tokens the run's model calls spent (``selectors.runs_of`` sums them; the
    extractive generator spends none)."""
    if not hasattr(run, "prompt_tokens") and run.query_id is not None:
        execution = run.query
        assert execution is not None  # query_id is set
        totals = execution.model_calls.aggregate(
            prompt_tokens=Sum("input_tokens"), completion_tokens=Sum("output_tokens")
        )
        # the attributes runs_of annotates, set here for a run read without them
        run.prompt_tokens, run.completion_tokens = (  # type: ignore[attr-defined]
            totals["prompt_tokens"],
            totals["completion_tokens"],
        )
    prompt = getattr(run, "prompt_tokens", None) or 0
    completion = getattr(run, "completion_tokens", None) or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def run_output(run: Run) -> dict[str, Any]:
    finished = run.status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
    return {
        "id": str(run.pk),
        "object": "thread.run",
        "created_at": _unix(run.created_at),
        "thread_id": str(run.thread_id),
        "assistant_id": str(run.app_id),
        "status": run.status,
        "required_action": None,
        "last_error": _last_error(run),
        "expires_at": None,
        "started_at": _unix(run.started_at),
        "cancelled_at": _unix(run.cancelled_at),
        "failed_at": _unix(run.failed_at),
        "completed_at": _unix(run.completed_at),
        "incomplete_details": None,
        "model": run.app.model or run.app.generator,
        "instructions": run.instructions,
        "tools": [{"type": "file_search"}],
        "metadata": run.metadata,
        "usage": _usage(run) if finished else None,
        "temperature": None,
        "top_p": None,
        "max_prompt_tokens": None,
        "max_completion_tokens": None,
        "truncation_strategy": {"type": "auto", "last_messages": None},
        "response_format": "auto",
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "query_id": str(run.query_id) if run.query_id else None,
    }
