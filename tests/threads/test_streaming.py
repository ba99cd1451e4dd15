"""A run streamed with ``"stream": true``, driven by the official ``openai``
package's ``runs.stream`` against a live server and a real worker: the Assistants
events in order, the text and its annotations rebuilt from the deltas, and the
final message exactly the one a polled run stores."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from openai import AssistantEventHandler
from openai.types.beta import AssistantStreamEvent
from openai.types.beta.threads import Text, TextDelta
from pytest_django.live_server_helper import LiveServer
from typing_extensions import override

from tests.support.assistants import text_of
from tests.support.worker import WorkerProcess
from tests.threads.conftest import Http, demo_handbook, tenant_with

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning"),
]

QUESTION = "How long are invoices and payroll records kept?"
OPENING = [
    "thread.run.created",
    "thread.run.queued",
    "thread.run.in_progress",
    "thread.message.created",
    "thread.message.in_progress",
    "thread.message.delta",
]


class Recorder(AssistantEventHandler):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self.text = ""

    @override
    def on_event(self, event: AssistantStreamEvent) -> None:
        self.names.append(event.event)

    @override
    def on_text_delta(self, delta: TextDelta, snapshot: Text) -> None:
        self.text += delta.value or ""


def test_it_streams_a_run_into_the_message_it_stores(
    celery_worker: WorkerProcess, live_server: LiveServer, tmp_path: Path
) -> None:
    tenant = tenant_with(
        "Acme", {"employee-handbook.md": demo_handbook(tmp_path)}, data_source="Handbook"
    )
    client = openai.OpenAI(api_key=tenant.key, base_url=f"{live_server.url}/v1", max_retries=0)
    assistant = str(tenant.app.pk)
    thread = client.beta.threads.create(messages=[{"role": "user", "content": QUESTION}])

    recorder = Recorder()
    with client.beta.threads.runs.stream(
        thread_id=thread.id, assistant_id=assistant, event_handler=recorder
    ) as stream:
        stream.until_done()
        final_messages = stream.get_final_messages()
        run = stream.get_final_run()

    assert recorder.names[: len(OPENING)] == OPENING
    assert recorder.names[-2:] == ["thread.message.completed", "thread.run.completed"]
    assert run.usage is not None
    assert run.status == "completed" and run.usage.total_tokens == 0
    stored = client.beta.threads.messages.list(thread_id=thread.id, limit=1).data[0]
    assert [m.model_dump() for m in final_messages] == [stored.model_dump()]
    answer = text_of(stored)
    assert "seven years" in answer.value and answer.annotations
    assert recorder.text.startswith(answer.value)  # then the source-tracing block
    assert client.beta.threads.runs.retrieve(run.id, thread_id=thread.id).model_dump() == (
        run.model_dump()
    )

    # the raw wire: text/event-stream, ending with OpenAI's done event
    client.beta.threads.messages.create(thread_id=thread.id, role="user", content="And travel?")
    http = Http(live_server.url, tenant.key)
    raw = http.post(f"/v1/threads/{thread.id}/runs", {"assistant_id": assistant, "stream": True})
    assert raw.status == 200 and raw.headers["Content-Type"].startswith("text/event-stream")
    assert b"\nevent: thread.run.completed\n" in raw.body
    assert raw.body.endswith(b"event: done\ndata: [DONE]\n\n")

    # refusals before the stream starts keep the JSON error shape and status
    with (
        pytest.raises(openai.NotFoundError),
        client.beta.threads.runs.stream(thread_id=thread.id, assistant_id=str(thread.id)),
    ):
        pass
    refused = http.post(f"/v1/threads/{thread.id}/runs", {"assistant_id": assistant, "stream": 1})
    assert refused.status == 400 and refused.json()["error"]["param"] == "stream"
