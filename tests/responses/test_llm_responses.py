"""Responses with a model generator: the instructions (and the input's developer
messages) reach the model, ``usage`` counts its tokens, and a model failure ends
the response ``failed`` with OpenAI's error code — streamed or not."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rest_framework.test import APIClient

from citations.models import QueryExecution, ResponseRecord, ResponseStatus
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS
from tests.support import model_servers as ms
from tests.support.http import streamed

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server = llm_support.openai_server

QUESTION = "How long are recordings kept?"


def _client(library: llm_support.Library) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    return client


def _events(response: _MonkeyPatchedResponse) -> list[tuple[str, dict]]:
    body = streamed(response).decode()
    events = []
    for block in body.strip().split("\n\n"):
        name, data = block.split("\n", 1)
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def test_the_instructions_reach_the_model_and_usage_is_real(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(ms.answering(CAMERAS))
    app = llm_library.app("openai", model="gpt-test", prompt="The app's own prompt.")
    body = {
        "model": str(app.pk),
        "instructions": "Answer like a records manager.",
        "input": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]},
        ],
    }
    reply = _client(llm_library).post("/v1/responses", body, format="json")
    assert reply.status_code == 200
    response = reply.json()
    assert response["status"] == "completed", response["error"]
    system = openai_server.requests[0]["messages"][0]["content"]
    assert system.startswith("Answer like a records manager.\n\nBe brief.")
    assert "The app's own prompt." not in system
    assert response["usage"]["input_tokens"] == 812 and response["usage"]["output_tokens"] == 64
    assert response["usage"]["total_tokens"] == 876
    text = response["output"][1]["content"][0]
    assert text["text"] == f"{CAMERAS[0]} [1]"
    [annotation] = text["annotations"]
    assert text["text"][annotation["index"] :] == "[1]" and annotation["filename"]
    assert QueryExecution.objects.get(pk=response["query_id"]).question == QUESTION


def test_a_model_failure_fails_the_response_with_its_code(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(lambda r: ms.openai_error(429, "Rate limit reached", "requests"))
    app = llm_library.app("openai")
    client = _client(llm_library)
    reply = client.post("/v1/responses", {"model": str(app.pk), "input": QUESTION}, format="json")
    assert reply.status_code == 200
    response = reply.json()
    assert (response["status"], response["output"]) == ("failed", [])
    assert response["error"]["code"] == "rate_limit_exceeded"
    assert "model_rate_limited" in response["error"]["message"]
    record = ResponseRecord.objects.get(pk=response["id"])
    assert record.status == ResponseStatus.FAILED and record.query_id is None
    assert QueryExecution.objects.get().status == "failed"

    streamed = client.post(
        "/v1/responses", {"model": str(app.pk), "input": QUESTION, "stream": True}, format="json"
    )
    assert streamed.status_code == 200 and streamed["Content-Type"].startswith("text/event-stream")
    events = _events(streamed)
    names = [name for name, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.failed"
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert all(data["type"] == name for name, data in events)
    failed = events[-1][1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "rate_limit_exceeded"
    assert failed["output"][0]["type"] == "file_search_call"
    assert failed["output"][0]["status"] == "failed"


def test_a_response_whose_model_timed_out_is_answered_by_the_fallback_and_says_so(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def hanging(request: dict) -> ms.Reply:
        reply = ms.answering(CAMERAS)(request)
        reply.delay = 1.6  # past the fixture's 1 s limits
        return reply

    openai_server.script(hanging)
    app = llm_library.app("openai", model_fallback="extractive")

    reply = _client(llm_library).post(
        "/v1/responses", {"model": str(app.pk), "input": QUESTION}, format="json"
    )

    response = reply.json()
    assert reply.status_code == 200 and response["status"] == "completed", response["error"]
    assert (response["generator"], response["fallback_reason"]) == ("extractive", "model_timeout")
    assert "[1]" in response["output"][1]["content"][0]["text"]
