"""Server-sent events of a run (``"stream": true``), in the Assistants event names
the official clients parse: the run's lifecycle as the worker moves it, then the
answer message as ``thread.message.delta`` text pieces, each ``file_citation``
annotation in the delta that completes its marker, and ``thread.message.completed``
with the stored message itself, so a streamed answer is exactly a polled one.

The worker still executes the run (the stream watches its status row): a client
that disconnects leaves the run to finish, and its answer is recorded the same."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.conf import settings

from citations.models import Message, MessageRole, Run, RunStatus
from citations.threads.serializers import message_output, run_output
from core.sse import sse

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # how often the stream reads the run's status row
PIECE_CHARS = 24  # a text delta holds about this many characters, cut after a space
STREAM_GRACE_SECONDS = 30  # past the worker's time limit, the stream gives up waiting
_TERMINAL = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


def text_pieces(text: str, cuts: Sequence[int] = ()) -> list[tuple[int, str]]:
    """``text`` as (start, piece) deltas of about ``PIECE_CHARS``, cut after a space,
    and also at every offset of ``cuts`` (where an annotation's marker ends, so the
    annotation can follow the piece that completes it)."""
    stops = sorted({c for c in cuts if 0 < c < len(text)} | {len(text)})
    pieces, start = [], 0
    for stop in stops:
        while start < stop:
            end = min(stop, start + PIECE_CHARS)
            if end < stop:
                space = text.rfind(" ", start + 1, end)
                end = space + 1 if space > start else end
            pieces.append((start, text[start:end]))
            start = end
    return pieces


def _delta(message_id: str, index: int, value: str, annotations: list[dict]) -> dict[str, Any]:
    return {
        "id": message_id,
        "object": "thread.message.delta",
        "delta": {
            "content": [
                {
                    "index": index,
                    "type": "text",
                    "text": {"value": value, "annotations": annotations},
                }
            ]
        },
    }


def _block_deltas(message_id: str, index: int, block: dict) -> Iterator[bytes]:
    text, annotations = block["text"]["value"], block["text"]["annotations"]
    pending = sorted(enumerate(annotations), key=lambda item: item[1]["end_index"])
    for start, piece in text_pieces(text, [a["end_index"] for a in annotations]):
        end = start + len(piece)
        done = [{"index": i, **a} for i, a in pending if a["end_index"] <= end]
        pending = [(i, a) for i, a in pending if a["end_index"] > end]
        yield sse("thread.message.delta", _delta(message_id, index, piece, done))


def message_events(message: Message, absolute: Callable[[str], str]) -> Iterator[bytes]:
    """created → in_progress → a delta per text piece → completed (the stored message)."""
    full = message_output(message, absolute=absolute)
    opened = {**full, "status": "in_progress", "content": [], "completed_at": None}
    yield sse("thread.message.created", opened)
    yield sse("thread.message.in_progress", opened)
    for index, block in enumerate(full["content"]):
        yield from _block_deltas(full["id"], index, block)
    yield sse("thread.message.completed", full)


def _run(run_id: str) -> Run:
    return Run.objects.select_related("app", "query").get(pk=run_id)


_UNFINISHED = {"completed_at": None, "failed_at": None, "cancelled_at": None, "usage": None}


def _as_queued(run: Run) -> dict[str, Any]:
    """The run as it was created, whatever the worker has made of it since."""
    started = {"started_at": None, "last_error": None, "query_id": None}
    return {**run_output(run), **_UNFINISHED, **started, "status": RunStatus.QUEUED}


def _as_in_progress(run: Run) -> dict[str, Any]:
    """The run as it was while the worker answered, for a run seen only once it was done."""
    return {**run_output(run), **_UNFINISHED, "status": RunStatus.IN_PROGRESS, "last_error": None}


def _error(code: str, message: str) -> bytes:
    return sse("error", {"error": {"message": message, "type": "server_error", "code": code}})


def run_events(*, run_id: str, absolute: Callable[[str], str]) -> Iterator[bytes]:
    """The events of a queued run until it ends, then ``event: done``."""
    try:
        yield from _run_events(run_id, absolute)
    except Exception:  # the stream has started: the error can only be an event now
        logger.exception("streaming run %s failed", run_id)
        yield _error("server_error", "the stream failed; retrieve the run to see its status")
    yield b"event: done\ndata: [DONE]\n\n"


def _run_events(run_id: str, absolute: Callable[[str], str]) -> Iterator[bytes]:
    run = _run(run_id)
    yield sse("thread.run.created", _as_queued(run))
    yield sse("thread.run.queued", _as_queued(run))
    seen: str = RunStatus.QUEUED
    deadline = time.monotonic() + settings.CELERY_TASK_TIME_LIMIT + STREAM_GRACE_SECONDS
    while run.status not in _TERMINAL:
        if time.monotonic() > deadline:
            yield _error("stream_timeout", f"run {run_id} is still {run.status}; poll it")
            return
        time.sleep(POLL_SECONDS)
        run = _run(run_id)
        if run.status != seen and run.status not in _TERMINAL:
            seen = run.status
            yield sse(f"thread.run.{run.status}", run_output(run))
    if seen == RunStatus.QUEUED and run.started_at is not None:  # it ran between two reads
        yield sse("thread.run.in_progress", _as_in_progress(run))
    if run.status == RunStatus.COMPLETED:
        message = Message.objects.filter(run=run, role=MessageRole.ASSISTANT).first()
        if message is not None:
            yield from message_events(message, absolute)
    yield sse(f"thread.run.{run.status}", run_output(run))
