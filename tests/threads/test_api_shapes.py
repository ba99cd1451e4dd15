"""The wire format, field by field, over raw HTTP against a live server and a real
worker, checked against the source-tracing document: run → messages (chunk_id,
page, lines, section) → chunk (file_id, Markdown locations) → original file."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from pathlib import Path

import pytest
from pytest_django.live_server_helper import LiveServer

from tests.support.openapi import assert_documented, generated_schema
from tests.support.worker import WorkerProcess
from tests.threads.conftest import Http, Reply, demo_handbook, tenant_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

BETA = {"OpenAI_Beta": "assistants=v2"}
THREAD_KEYS = {"id", "object", "created_at", "metadata", "tool_resources"}
MESSAGE_KEYS = {
    "id", "object", "created_at", "thread_id", "status", "completed_at", "incomplete_at",
    "incomplete_details", "role", "content", "assistant_id", "run_id", "attachments", "metadata",
}  # fmt: skip
RUN_KEYS = {
    "id", "object", "created_at", "thread_id", "assistant_id", "status", "required_action",
    "last_error", "expires_at", "started_at", "cancelled_at", "failed_at", "completed_at",
    "incomplete_details", "model", "instructions", "tools", "metadata", "usage", "temperature",
    "top_p", "max_prompt_tokens", "max_completion_tokens", "truncation_strategy",
    "response_format", "tool_choice", "parallel_tool_calls", "query_id",
}  # fmt: skip
LIST_KEYS = {"object", "data", "first_id", "last_id", "has_more"}
CHUNK_FIELDS = {"chunk_id", "page", "lines", "section", "database_id", "file_id", "quoted_as"}
LOCATION_FIELDS = {
    "line_number_start", "line_number_end", "char_start", "char_end", "hierarchy", "page_number",
}  # fmt: skip


def _is_unix(value: object) -> bool:
    return isinstance(value, int) and abs(value - time.time()) < 600


def _poll(http: Http, path: str) -> tuple[dict, list[str]]:
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        reply = http.get(path, **BETA)
        assert reply.status == 200
        assert int(reply.headers["openai-poll-after-ms"]) > 0
        run = reply.json()
        if not seen or seen[-1] != run["status"]:
            seen.append(run["status"])
        if run["status"] in {"completed", "failed", "cancelled"}:
            return run, seen
        time.sleep(0.1)
    raise AssertionError(f"run still {seen[-1]}")


class Documented:
    """Asserts each reply is what the OpenAPI schema says that operation answers."""

    def __init__(self) -> None:
        self.schema = generated_schema()
        self.checked: list[str] = []

    def __call__(self, reply: Reply, path: str, method: str = "get") -> dict:
        body = reply.json()
        assert_documented(self.schema, reply.status, body, path, method)
        self.checked.append(f"{method} {path} {reply.status}")
        return body


def test_it_speaks_the_assistants_wire_format_down_to_the_file(
    celery_worker: WorkerProcess, live_server: LiveServer, tmp_path: Path
) -> None:
    original = demo_handbook(tmp_path)
    tenant = tenant_with("Acme", {"employee-handbook.md": original}, data_source="Handbook")
    http = Http(live_server.url, tenant.key)
    documented = Documented()
    question = "How long are invoices and payroll records kept?"

    created = http.post("/v1/threads", {"metadata": {"ticket": "HR-7"}}, **BETA)
    assert created.status == 200
    thread = documented(created, "/v1/threads", "post")
    assert set(thread) == THREAD_KEYS
    assert thread["object"] == "thread" and _is_unix(thread["created_at"])
    assert thread["metadata"] == {"ticket": "HR-7"}
    assert http.get(f"/v1/threads/{thread['id']}", **BETA).json() == thread
    base = f"/v1/threads/{thread['id']}"

    posted = http.post(f"{base}/messages", {"role": "user", "content": question}, **BETA)
    assert posted.status == 200
    user_message = documented(posted, "/v1/threads/{thread_id}/messages", "post")
    assert set(user_message) == MESSAGE_KEYS
    assert user_message["object"] == "thread.message" and user_message["role"] == "user"
    assert user_message["content"] == [
        {"type": "text", "text": {"value": question, "annotations": []}}
    ]
    assert (user_message["run_id"], user_message["assistant_id"]) == (None, None)
    assert user_message["thread_id"] == thread["id"] and user_message["status"] == "completed"

    started = http.post(f"{base}/runs", {"assistant_id": str(tenant.app.pk)}, **BETA)
    assert started.status == 200
    queued = documented(started, "/v1/threads/{thread_id}/runs", "post")
    assert set(queued) == RUN_KEYS
    assert queued["object"] == "thread.run" and queued["status"] == "queued"
    assert (queued["usage"], queued["last_error"], queued["query_id"]) == (None, None, None)
    assert queued["tools"] == [{"type": "file_search"}] and queued["model"] == "extractive"

    run, seen = _poll(http, f"{base}/runs/{queued['id']}")
    documented(http.get(f"{base}/runs/{queued['id']}"), "/v1/threads/{thread_id}/runs/{run_id}")
    assert seen[-1] == "completed", run["last_error"]
    assert seen == [s for s in ("queued", "in_progress", "completed") if s in seen]
    assert queued["created_at"] <= run["started_at"] <= run["completed_at"]
    assert run["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert uuid.UUID(run["query_id"])

    runs = documented(http.get(f"{base}/runs", **BETA), "/v1/threads/{thread_id}/runs")
    assert set(runs) == LIST_KEYS and [r["id"] for r in runs["data"]] == [run["id"]]

    # GET /v1/threads/{thread_id}/messages: newest first by default
    listed = documented(http.get(f"{base}/messages", **BETA), "/v1/threads/{thread_id}/messages")
    answer_path = f"{base}/messages/{listed['data'][0]['id']}"
    assert (
        documented(http.get(answer_path), "/v1/threads/{thread_id}/messages/{message_id}")
        == listed["data"][0]
    )
    assert set(listed) == LIST_KEYS and listed["object"] == "list"
    answer_message, question_message = listed["data"]
    assert (listed["first_id"], listed["last_id"], listed["has_more"]) == (
        answer_message["id"],
        user_message["id"],
        False,
    )
    assert set(answer_message) == MESSAGE_KEYS
    assert answer_message["role"] == "assistant" and answer_message["run_id"] == run["id"]
    assert answer_message["assistant_id"] == str(tenant.app.pk)
    assert answer_message["metadata"]["query_id"] == run["query_id"]
    answer_block, tracing_block = answer_message["content"]
    assert answer_block["type"] == tracing_block["type"] == "text"
    answer = answer_block["text"]["value"]
    assert "seven years" in answer
    annotations = answer_block["text"]["annotations"]
    assert annotations
    for annotation in annotations:
        assert {"type", "text", "start_index", "end_index", "file_citation"} <= set(annotation)
        assert annotation["type"] == "file_citation"
        assert answer[annotation["start_index"] : annotation["end_index"]] == annotation["text"]
        assert annotation["file_citation"]["file_id"] == str(
            tenant.files["employee-handbook.md"].pk
        )

    tracing = json.loads(tracing_block["text"]["value"])
    assert tracing["object"] == "source_tracing" and tracing["query_id"] == run["query_id"]
    assert answer_message["metadata"]["database_id"] == tracing["chunks"][0]["database_id"]
    for chunk in tracing["chunks"]:
        assert set(chunk) >= CHUNK_FIELDS
        assert chunk["page"] is None  # native Markdown has no pages
        assert 1 <= chunk["lines"]["start"] <= chunk["lines"]["end"]
    cited = next(c for c in tracing["chunks"] if c["quoted_as"] == "1")
    assert cited["section"].startswith("Employee Handbook")

    # the chain of custody is followed by the absolute URLs the answer gives, like every
    # other URL of the API (they were bare paths)
    chunk_path = f"/v1/flow/vectordb/{cited['database_id']}/chunk/{cited['chunk_id']}"
    assert cited["chunk_url"] == live_server.url + chunk_path
    assert cited["file_url"] == f"{live_server.url}/v1/flow/files/{cited['file_id']}/content"
    listed = http.get(f"{base}/messages?limit=1", **BETA).json()["data"][0]
    assert json.loads(listed["content"][1]["text"]["value"])["chunks"] == tracing["chunks"]
    assert all(c["chunk_url"].startswith(live_server.url + "/") for c in tracing["chunks"])

    # GET /v1/flow/vectordb/{database_id}/chunk/{chunk_id}
    reply = http.get(cited["chunk_url"].removeprefix(live_server.url))
    assert reply.status == 200
    provenance = reply.json()
    assert {"chunk_id", "file_id", "chunk_text", "locations"} <= set(provenance)
    assert provenance["chunk_id"] == cited["chunk_id"]
    assert provenance["file_id"] == cited["file_id"]
    assert "seven years" in provenance["chunk_text"]
    # the chunk takes in the section before "Records Retention": a location for each
    first, *_, last = provenance["locations"]
    assert all(set(location) >= LOCATION_FIELDS for location in provenance["locations"])
    assert " > ".join(first["hierarchy"]) == cited["section"]
    assert "## Records Retention" in provenance["chunk_text"]
    assert last["hierarchy"][-1] == "Records Retention"
    assert all(location["page_number"] is None for location in provenance["locations"])
    assert (first["line_number_start"], last["line_number_end"]) == (
        cited["lines"]["start"],
        cited["lines"]["end"],
    )

    # GET /v1/flow/files/{file_id}/content: the uploaded bytes; their lines hold the chunk
    content = http.get(f"/v1/flow/files/{provenance['file_id']}/content")
    assert content.status == 200 and content.body == original
    assert hashlib.sha256(content.body).hexdigest() == content.headers["X-Content-SHA256"]
    lines = content.body.decode().splitlines()
    span = "\n".join(lines[first["line_number_start"] - 1 : last["line_number_end"]])
    assert provenance["chunk_text"].strip() in span

    # cursor pagination, as OpenAI does it
    page = http.get(f"{base}/messages?limit=1&order=asc", **BETA).json()
    assert ([m["id"] for m in page["data"]], page["has_more"]) == ([user_message["id"]], True)
    page = http.get(f"{base}/messages?limit=1&order=asc&after={page['last_id']}").json()
    assert ([m["id"] for m in page["data"]], page["has_more"]) == ([answer_message["id"]], False)
    page = http.get(f"{base}/messages?order=asc&before={answer_message['id']}").json()
    assert [m["id"] for m in page["data"]] == [question_message["id"]]
    page = http.get(f"{base}/messages?run_id={run['id']}").json()
    assert [m["id"] for m in page["data"]] == [answer_message["id"]]

    # refusals are documented too, in the one error shape
    finished = http.post(f"{base}/runs/{run['id']}/cancel", **BETA)
    assert finished.status == 400
    body = documented(finished, "/v1/threads/{thread_id}/runs/{run_id}/cancel", "post")
    assert body["error"]["code"] == "run_not_cancellable"
    unknown = http.get(f"/v1/threads/{uuid.uuid4()}", **BETA)
    assert unknown.status == 404
    documented(unknown, "/v1/threads/{thread_id}")
    bad_limit = http.get(f"{base}/messages?limit=0", **BETA)
    assert bad_limit.status == 400
    documented(bad_limit, "/v1/threads/{thread_id}/messages")
    assert len(documented.checked) == 10
