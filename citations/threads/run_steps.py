"""A run's steps in the Assistants wire format (``thread.run.step``): one
``tool_calls`` step per reasoning step, a ``file_search`` call whose results are
that step's retrieval (file, name, score; the chunk's text when ``include[]`` asks
for it), then the ``message_creation`` step of the answer. A single-step app's run
has one ``file_search`` step over the whole retrieval. Step ids are derived from
the run, so they are stable and need no rows of their own."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Sum

from citations.models import (
    Message,
    MessageRole,
    ModelCall,
    ReasoningStep,
    RetrievalHit,
    Run,
    RunStatus,
)
from citations.reasoning.selectors import steps_of
from citations.threads.errors import ThreadRejected

INCLUDE_CONTENT = "step_details.tool_calls[*].file_search.results[*].content"
RANKER = "default_2024_08_21"
METADATA_VALUE_CHARS = 512


@dataclass(frozen=True)
class RunStep:
    """One step of a run, ready to shape: its id, kind and what it holds."""

    id: str
    kind: str  # "tool_calls" or "message_creation"
    number: int
    hits: list[Any]
    metadata: dict[str, str]
    usage: dict[str, int]
    message_id: str = ""


def _unix(moment: Any) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


def _id(run: Run, name: str) -> str:
    return str(uuid.uuid5(run.pk, name))


def _usage(run: Run, attempts: Iterable[int]) -> dict[str, int]:
    totals = ModelCall.objects.filter(query_id=run.query_id, attempt__in=list(attempts)).aggregate(
        prompt=Sum("input_tokens"), completion=Sum("output_tokens")
    )
    prompt, completion = totals["prompt"] or 0, totals["completion"] or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _hits_of(step: ReasoningStep, hits: list[RetrievalHit]) -> list[RetrievalHit]:
    """The step's own retrieval (its range of k_pos) among the answer's hits, as
    ``reasoning.selectors.step_hits`` reads it."""
    low, high = step.hits_from, step.hits_to
    if low is None or high is None:  # set together: a step that searched
        return []
    return [hit for hit in hits if low <= hit.k_pos <= high]


def _usage_of(calls: list[tuple[int, int | None, int | None]], attempts: Iterable[int]) -> dict:
    """``_usage`` over ``(attempt, input_tokens, output_tokens)`` rows already read."""
    chosen = set(attempts)
    prompt = sum(tokens or 0 for attempt, tokens, _ in calls if attempt in chosen)
    completion = sum(tokens or 0 for attempt, _, tokens in calls if attempt in chosen)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _clip(value: object) -> str:
    return str(value)[:METADATA_VALUE_CHARS]


def run_steps_of(*, run: Run) -> list[RunStep]:
    """The steps of a finished run, in the order they were taken (none before the
    answer is recorded, and none for a run that failed)."""
    if run.query_id is None or run.status not in (RunStatus.COMPLETED, RunStatus.CANCELLED):
        return []
    execution = run.query
    assert execution is not None  # query_id is set
    stored = list(steps_of(execution=execution))
    if stored:
        # every step's hits and model calls in one query each, not one per step
        hits = list(
            execution.hits.select_related("file", "chunk")
            .defer("chunk__embedding")
            .order_by("k_pos")
        )
        calls = list(execution.model_calls.values_list("attempt", "input_tokens", "output_tokens"))
        found = [
            RunStep(
                id=_id(run, f"file_search:{step.step_number}"),
                kind="tool_calls",
                number=step.step_number,
                hits=_hits_of(step, hits),
                metadata={
                    "step_number": str(step.step_number),
                    "question": _clip(step.question),
                    "intermediate_answer": _clip(step.intermediate_answer),
                    "confidence_score": f"{step.confidence_score:.3f}",
                    "query_id": str(run.query_id),
                },
                usage=_usage_of(calls, step.model_call_attempts),
            )
            for step in stored
        ]
    else:
        answer_hits = execution.hits.select_related("file", "chunk").defer("chunk__embedding")
        attempts = execution.model_calls.values_list("attempt", flat=True)
        found = [
            RunStep(
                id=_id(run, "file_search:1"),
                kind="tool_calls",
                number=1,
                hits=list(answer_hits.order_by("k_pos")),
                metadata={"step_number": "1", "query_id": str(run.query_id)},
                usage=_usage(run, attempts),
            )
        ]
    message = Message.objects.filter(run=run, role=MessageRole.ASSISTANT).first()
    if message is not None:
        zero = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        found.append(
            RunStep(
                id=_id(run, "message_creation"),
                kind="message_creation",
                number=len(found) + 1,
                hits=[],
                metadata={"query_id": str(run.query_id)},
                usage=zero,
                message_id=str(message.pk),
            )
        )
    return found


def run_step_get(*, run: Run, step_id: str) -> RunStep:
    step = next((s for s in run_steps_of(run=run) if s.id == step_id), None)
    if step is None:
        raise ThreadRejected(
            f"No run step found with id '{step_id}'.", code="not_found", status=404, param="step_id"
        )
    return step


def include_content(values: list[str]) -> bool:
    """Whether ``include[]`` asks for the results' content; anything else is refused."""
    unknown = [v for v in values if v != INCLUDE_CONTENT]
    if unknown:
        raise ThreadRejected(
            f"include must only name '{INCLUDE_CONTENT}', not {unknown[0]!r}",
            code="invalid_include",
            param="include",
        )
    return bool(values)


def _result(hit: Any, content: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "file_id": str(hit.file_id),
        "file_name": hit.file.name,
        "score": round(min(1.0, max(0.0, hit.score_norm)), 6),
    }
    if content:
        result["content"] = [{"type": "text", "text": hit.chunk.chunk_text}]
    return result


def _details(run: Run, step: RunStep, content: bool) -> dict[str, Any]:
    if step.kind == "message_creation":
        return {"type": "message_creation", "message_creation": {"message_id": step.message_id}}
    call = {
        "id": f"call_{uuid.UUID(_id(run, f'call:{step.number}')).hex[:24]}",
        "type": "file_search",
        "file_search": {
            "ranking_options": {"ranker": RANKER, "score_threshold": run.app.min_score},
            "results": [_result(hit, content) for hit in step.hits],
        },
    }
    return {"type": "tool_calls", "tool_calls": [call]}


def run_step_output(run: Run, step: RunStep, *, content: bool) -> dict[str, Any]:
    """OpenAI's run step object."""
    done = run.completed_at or run.cancelled_at
    return {
        "id": step.id,
        "object": "thread.run.step",
        "created_at": _unix(run.started_at or run.created_at),
        "assistant_id": str(run.app_id),
        "thread_id": str(run.thread_id),
        "run_id": str(run.pk),
        "type": step.kind,
        "status": "completed",
        "step_details": _details(run, step, content),
        "last_error": None,
        "expired_at": None,
        "cancelled_at": None,
        "failed_at": None,
        "completed_at": _unix(done),
        "metadata": step.metadata,
        "usage": step.usage,
    }


def run_steps_page(
    steps: list[RunStep], *, limit: int, order: str, after: str | None, before: str | None
) -> tuple[list[RunStep], bool]:
    """OpenAI cursor pagination over the steps (taken in order; ``desc`` newest first)."""
    ordered = steps if order == "asc" else list(reversed(steps))
    ids = [s.id for s in ordered]
    for param, cursor in (("after", after), ("before", before)):
        if cursor is not None and cursor not in ids:
            raise ThreadRejected(
                f"{param} names no object of this list", code="invalid_cursor", param=param
            )
    if after is not None:
        ordered = ordered[ids.index(after) + 1 :]
    if before is not None:
        remaining = [s.id for s in ordered]
        if before not in remaining:
            return [], False
        cut = remaining.index(before)
        ordered = ordered[max(0, cut - limit) : cut]
        return ordered, cut - limit > 0
    return ordered[:limit], len(ordered) > limit
