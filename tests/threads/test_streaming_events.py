"""The run stream's events without a worker: text pieces that rebuild the answer,
each annotation in the delta that completes its marker, and a run that ends
failed or cancelled reported as such, always followed by ``event: done``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from django.utils import timezone

from citations.llm_apps import app_create
from citations.models import Message, MessageRole, Run, RunStatus
from citations.threads import services
from citations.threads.streaming import PIECE_CHARS, message_events, run_events, text_pieces
from tests import factories

ANSWER = "Invoices are kept for seven years [1] and travel receipts for ten years [2] [3]."


def _parse(chunks: Iterable[bytes]) -> list[tuple[str, Any]]:
    events = []
    for block in b"".join(chunks).decode().strip().split("\n\n"):
        name, data = block.split("\n", 1)
        body = data.removeprefix("data: ")
        events.append(
            (name.removeprefix("event: "), body if body == "[DONE]" else json.loads(body))
        )
    return events


@pytest.mark.parametrize("cuts", [[], [5, 37, 76], [len(ANSWER)]])
def test_the_pieces_rebuild_the_text_and_end_at_every_cut(cuts: list[int]) -> None:
    pieces = text_pieces(ANSWER, cuts)
    assert "".join(piece for _, piece in pieces) == ANSWER
    ends = {start + len(piece) for start, piece in pieces}
    assert set(cuts) <= ends and all(len(piece) <= PIECE_CHARS for _, piece in pieces)
    assert [start for start, _ in pieces] == [0, *sorted(ends)[:-1]]


def _marker(number: str) -> dict:
    start = ANSWER.index(f"[{number}]")
    return {
        "type": "file_citation",
        "text": f"[{number}]",
        "start_index": start,
        "end_index": start + 3,
        "file_citation": {"file_id": "f", "chunk_id": "c", "quote": "q"},
    }


@pytest.fixture
def run(db: None) -> Run:
    org = factories.organization("Acme")
    factories.data_source(org, "Policies")
    app = app_create(organization=org, name="Assistant", data_source_names=["Policies"])
    thread = services.thread_create(organization=org)
    question = services.message_create(thread=thread, role="user", content="How long?")
    return Run.objects.create(thread=thread, app=app, question=question)


def test_each_annotation_comes_with_the_delta_that_completes_its_marker(run: Run) -> None:
    annotations = [_marker("1"), _marker("2"), _marker("3")]
    message = Message.objects.create(
        thread=run.thread, role=MessageRole.ASSISTANT, content=ANSWER, annotations=annotations,
        run=run, app=run.app,
    )  # fmt: skip
    events = _parse(message_events(message, str))
    names = [name for name, _ in events]
    assert names[:2] == ["thread.message.created", "thread.message.in_progress"]
    assert names[-1] == "thread.message.completed" and set(names[2:-1]) == {"thread.message.delta"}
    assert events[0][1]["content"] == [] and events[0][1]["status"] == "in_progress"
    text, found = "", []
    for _, delta in events[2:-1]:
        [block] = delta["delta"]["content"]
        text += block["text"]["value"]
        for annotation in block["text"]["annotations"]:
            assert len(text) >= annotation["end_index"] > len(text) - len(block["text"]["value"])
            found.append(annotation)
    assert text == ANSWER
    assert [a.pop("index") for a in found] == [0, 1, 2] and found == annotations
    assert events[-1][1]["content"][0]["text"] == {"value": ANSWER, "annotations": annotations}


@pytest.mark.parametrize(
    ("status", "started", "expected"),
    [
        (RunStatus.FAILED, True, ["thread.run.in_progress", "thread.run.failed"]),
        (RunStatus.CANCELLED, False, ["thread.run.cancelled"]),
    ],
)
def test_a_run_that_does_not_complete_ends_the_stream_with_its_status(
    run: Run, status: str, started: bool, expected: list[str]
) -> None:
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        status=status, started_at=now if started else None, failed_at=now, error_code="server_error"
    )
    events = _parse(run_events(run_id=str(run.pk), absolute=str))
    names = [name for name, _ in events]
    assert names == ["thread.run.created", "thread.run.queued", *expected, "done"]
    assert events[0][1]["status"] == "queued" and events[-1][1] == "[DONE]"
    assert events[-2][1]["status"] == status
    if status == RunStatus.FAILED:
        assert events[-2][1]["last_error"]["code"] == "server_error"
