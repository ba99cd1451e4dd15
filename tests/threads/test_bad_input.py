"""Bad input gets the OpenAI error shape (``{"error": {message, type, param, code}}``)
with the status the openai client maps to its typed errors — never a 500."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from citations.llm_apps import app_create
from citations.models import App, Message, Run, RunStatus, Thread
from citations.threads import services
from tests import factories

pytestmark = pytest.mark.django_db


@dataclass
class Caller:
    client: Client
    app: App

    def get(self, path: str) -> tuple[int, dict]:
        response = self.client.get(path)
        return response.status_code, response.json()

    def post(self, path: str, body: object = None) -> tuple[int, dict]:
        response = self.client.post(
            path, json.dumps({} if body is None else body), content_type="application/json"
        )
        return response.status_code, response.json()


def _caller(name: str) -> Caller:
    org = factories.organization(name)
    factories.data_source(org, "Policies")
    app = app_create(organization=org, name="Assistant", data_source_names=["Policies"])
    key = factories.api_key(org)
    return Caller(Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_OPENAI_BETA="assistants=v2"), app)


@pytest.fixture
def acme() -> Caller:
    return _caller("Acme")


@pytest.fixture
def globex() -> Caller:
    return _caller("Globex")


def _thread(caller: Caller, *messages: str) -> str:
    status, body = caller.post("/v1/threads")
    assert status == 200
    for content in messages:
        assert (
            caller.post(f"/v1/threads/{body['id']}/messages", {"role": "user", "content": content})[
                0
            ]
            == 200
        )
    return body["id"]


def _error(status: int, body: dict, expected_status: int, code: str, param: str | None) -> None:
    assert status == expected_status, body
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert (body["error"]["code"], body["error"]["param"]) == (code, param), body
    assert body["error"]["message"]


@pytest.mark.parametrize(
    "thread_id", ["6d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", "thread_abc", "not a uuid"]
)
def test_it_does_not_find_unknown_threads(acme: Caller, thread_id: str) -> None:
    for status, body in [
        acme.get(f"/v1/threads/{thread_id}"),
        acme.get(f"/v1/threads/{thread_id}/messages"),
        acme.post(f"/v1/threads/{thread_id}/messages", {"role": "user", "content": "Hi?"}),
        acme.get(f"/v1/threads/{thread_id}/runs"),
        acme.post(f"/v1/threads/{thread_id}/runs", {"assistant_id": str(acme.app.pk)}),
    ]:
        _error(status, body, 404, "not_found", "thread_id")
        assert body["error"]["type"] == "not_found_error"


def test_it_hides_another_tenants_thread_and_its_runs(acme: Caller, globex: Caller) -> None:
    thread_id = _thread(acme, "What is the retention period?")
    run = services.run_create(thread=Thread.objects.get(pk=thread_id), app=acme.app)
    base = f"/v1/threads/{thread_id}"
    for status, body in [
        globex.get(base),
        globex.get(f"{base}/messages"),
        globex.post(f"{base}/messages", {"role": "user", "content": "And now?"}),
        globex.get(f"{base}/runs"),
        globex.post(f"{base}/runs", {"assistant_id": str(globex.app.pk)}),
        globex.get(f"{base}/runs/{run.pk}"),
        globex.post(f"{base}/runs/{run.pk}/cancel"),
    ]:
        _error(status, body, 404, "not_found", "thread_id")
    assert Message.objects.filter(thread_id=thread_id).count() == 1
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_it_does_not_run_another_tenants_private_assistant(acme: Caller, globex: Caller) -> None:
    thread_id = _thread(acme, "What is the retention period?")
    for assistant_id in [str(globex.app.pk), str(uuid.uuid4()), "asst_abc"]:
        status, body = acme.post(f"/v1/threads/{thread_id}/runs", {"assistant_id": assistant_id})
        _error(status, body, 404, "not_found", "assistant_id")
    status, body = acme.post(f"/v1/threads/{thread_id}/runs", {})
    _error(status, body, 400, "missing_required_parameter", "assistant_id")
    assert not Run.objects.exists()


def test_it_does_not_find_unknown_runs_and_messages(acme: Caller) -> None:
    base = f"/v1/threads/{_thread(acme, 'Hello?')}"
    for path in [f"{base}/runs/{uuid.uuid4()}", f"{base}/runs/run_abc"]:
        _error(*acme.get(path), 404, "not_found", "run_id")
        _error(*acme.post(f"{path}/cancel"), 404, "not_found", "run_id")
    _error(*acme.get(f"{base}/messages/{uuid.uuid4()}"), 404, "not_found", "message_id")
    _error(*acme.get(f"{base}/messages?run_id={uuid.uuid4()}"), 404, "not_found", "run_id")


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("", "empty_content"),
        ("   \n ", "empty_content"),
        ([{"type": "text", "text": "  "}], "empty_content"),
        ("x" * 2001, "content_too_long"),
        (None, "invalid_content"),
        (42, "invalid_content"),
        ([{"type": "image_url", "image_url": {"url": "http://x"}}], "unsupported_content"),
    ],
)
def test_it_refuses_messages_without_usable_content(
    acme: Caller, content: object, code: str
) -> None:
    thread_id = _thread(acme)
    status, body = acme.post(
        f"/v1/threads/{thread_id}/messages", {"role": "user", "content": content}
    )
    _error(status, body, 400, code, "content")
    assert not Message.objects.exists()


def test_it_accepts_text_parts_and_the_longest_allowed_content(acme: Caller) -> None:
    thread_id = _thread(acme)
    parts = [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second?"}]
    status, body = acme.post(
        f"/v1/threads/{thread_id}/messages", {"role": "user", "content": parts}
    )
    assert status == 200 and body["content"][0]["text"]["value"] == "First part.\nSecond?"
    status, _ = acme.post(
        f"/v1/threads/{thread_id}/messages", {"role": "user", "content": "x" * 2000}
    )
    assert status == 200


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"role": "system", "content": "Hi"}, "invalid_role", "role"),
        ({"role": "user", "content": "Hi", "metadata": {"k": 1}}, "invalid_metadata", "metadata"),
        ({"role": "user", "content": "Hi", "metadata": {str(i): "v" for i in range(17)}},
         "invalid_metadata", "metadata"),
    ],
)  # fmt: skip
def test_it_refuses_malformed_messages(
    acme: Caller, body: dict[str, Any], code: str, param: str
) -> None:
    _error(*acme.post(f"/v1/threads/{_thread(acme)}/messages", body), 400, code, param)


def test_it_refuses_malformed_threads(acme: Caller) -> None:
    _error(*acme.post("/v1/threads", {"metadata": "x"}), 400, "invalid_metadata", "metadata")
    _error(
        *acme.post("/v1/threads", {"messages": [{"role": "user", "content": ""}]}),
        400,
        "empty_content",
        "messages[0].content",
    )
    _error(*acme.post("/v1/threads", ["not", "an", "object"]), 400, "invalid_body", None)
    assert not Thread.objects.exists()


def test_it_refuses_a_run_on_a_thread_without_a_user_message(acme: Caller) -> None:
    empty = _thread(acme)
    status, body = acme.post(f"/v1/threads/{empty}/runs", {"assistant_id": str(acme.app.pk)})
    _error(status, body, 400, "no_user_message", "thread_id")
    only_assistant = _thread(acme)
    acme.post(f"/v1/threads/{only_assistant}/messages", {"role": "assistant", "content": "Hi!"})
    status, body = acme.post(
        f"/v1/threads/{only_assistant}/runs", {"assistant_id": str(acme.app.pk)}
    )
    _error(status, body, 400, "no_user_message", "thread_id")
    assert not Run.objects.exists()


def test_it_refuses_a_stream_flag_that_is_no_boolean_and_a_second_active_run(acme: Caller) -> None:
    base = f"/v1/threads/{_thread(acme, 'What is the retention period?')}"
    run_body = {"assistant_id": str(acme.app.pk)}
    refused = acme.post(f"{base}/runs", run_body | {"stream": "yes"})
    _error(*refused, 400, "invalid_stream", "stream")
    assert acme.post(f"{base}/runs", run_body)[0] == 200
    _error(*acme.post(f"{base}/runs", run_body), 400, "run_active", "thread_id")
    status, body = acme.post(f"{base}/messages", {"role": "user", "content": "And?"})
    _error(status, body, 400, "run_active", "thread_id")


@pytest.mark.parametrize(
    ("query", "param"),
    [("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"), ("order=up", "order"),
     ("after=7e2f3a4b-5c6d-4e7f-9081-92a3b4c5d6e7", "after"), ("before=msg_x", "before")],
)  # fmt: skip
def test_it_refuses_bad_list_parameters(acme: Caller, query: str, param: str) -> None:
    status, body = acme.get(f"/v1/threads/{_thread(acme, 'Hi?')}/messages?{query}")
    assert status == 400 and body["error"]["param"] == param


def test_it_needs_an_api_key() -> None:
    response = Client().post("/v1/threads", "{}", content_type="application/json")
    assert response.status_code in (401, 403)
    assert response.json()["error"]["type"] in ("authentication_error", "permission_error")
    response = Client(HTTP_AUTHORIZATION="Bearer nope").get(f"/v1/threads/{uuid.uuid4()}")
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"
