"""What users meet when a model fails: each failure gives the REST error shape with a
code and a message saying what to fix, the query execution ends ``failed`` with the
reason, and nothing is recorded as an answer. Only 429, 5xx and timeouts are retried."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rest_framework.test import APIClient

from citations.models import App, ClaimCitation, ModelCall, QueryExecution, QuotedSource
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS
from tests.support import model_servers as ms

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server

QUESTION = "How long are camera recordings kept?"


def _ask(library: llm_support.Library, app: App) -> _MonkeyPatchedResponse:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    return client.post(
        f"/semantics/apps/{app.pk}/query-executions", {"query": QUESTION}, format="json"
    )


def _assert_failed(response: _MonkeyPatchedResponse, code: str, status: int, words: str) -> None:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code and words in error["message"], error
    execution = QueryExecution.objects.get()
    assert execution.status == "failed" and error["message"] in execution.error_message
    assert not QuotedSource.objects.exists() and not ClaimCitation.objects.exists()
    assert not ModelCall.objects.exists()


def _delayed(reply: ms.Reply) -> ms.Reply:
    reply.delay = 1.6
    return reply


def _empty(request: dict[str, Any]) -> ms.Reply:
    return ms.chat_completion(request, "")


OPENAI_FAILURES = [
    ("wrong key", None, "model_auth_failed", 502, "OPENAI_API_KEY", 1),
    (
        "unknown model",
        lambda r: ms.openai_error(
            404, "The model `gpt-nope` does not exist", "invalid_request_error", "model_not_found"
        ),
        "model_not_found",
        502,
        "gpt-nope",
        1,
    ),
    (
        "rate limited",
        lambda r: ms.openai_error(429, "Rate limit reached", "requests", "rate_limit_exceeded"),
        "model_rate_limited",
        503,
        "after 3 tries",
        3,
    ),
    (
        "server error",
        lambda r: ms.openai_error(500, "The server had an error", "server_error"),
        "model_unavailable",
        502,
        "500 after 3 tries",
        3,
    ),
    (
        "timeout",
        lambda r: _delayed(ms.answering(CAMERAS)(r)),
        "model_timeout",
        504,
        "did not answer within 1 s",
        1,
    ),
    (
        "refusal",
        lambda r: ms.chat_completion(r, None, refusal="I can't help with that."),
        "model_refused",
        502,
        "I can't help with that.",
        1,
    ),
    (
        "invalid json",
        lambda r: ms.chat_completion(r, "Camera recordings are kept for thirty days."),
        "model_invalid_reply",
        502,
        "invalid_json",
        2,
    ),
    ("empty reply", _empty, "model_empty_reply", 502, "empty reply", 2),
    (
        "bad request",
        lambda r: ms.openai_error(400, "max_tokens is too large", "invalid_request_error"),
        "model_bad_request",
        502,
        "max_tokens is too large",
        1,
    ),
]


@pytest.mark.parametrize(
    ("script", "code", "status", "words", "requests"),
    [case[1:] for case in OPENAI_FAILURES],
    ids=[case[0] for case in OPENAI_FAILURES],
)
def test_openai_failures(
    llm_library: llm_support.Library,
    openai_server: ms.Server,
    monkeypatch: pytest.MonkeyPatch,
    *,
    script: ms.Script | None,
    code: str,
    status: int,
    words: str,
    requests: int,
) -> None:
    app = llm_library.app("openai", model="gpt-nope")
    if script is None:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        script = ms.answering(CAMERAS)
    openai_server.script(script)
    _assert_failed(_ask(llm_library, app), code, status, words)
    assert len(openai_server.requests) == requests


def test_no_key_and_no_model_say_what_to_set(
    llm_library: llm_support.Library, openai_server: ms.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    app = llm_library.app("openai")
    _assert_failed(_ask(llm_library, app), "model_not_configured", 503, "OPENAI_API_KEY_FILE")
    App.objects.filter(pk=app.pk).update(model="")
    response = _ask(llm_library, app)
    assert response.json()["error"]["code"] == "model_not_configured"
    assert "has no model" in response.json()["error"]["message"]
    assert not openai_server.requests


def test_the_key_can_come_from_a_file(
    llm_library: llm_support.Library,
    openai_server: ms.Server,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "openai-key"
    key_file.write_text(ms.KEY + "\n")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY_FILE", str(key_file))
    openai_server.script(ms.answering(CAMERAS))
    response = _ask(llm_library, llm_library.app("openai"))
    assert response.status_code == 201 and response.json()["answer"] == f"{CAMERAS[0]} [1]"


def test_a_transient_server_error_is_retried_and_counted(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(
        lambda r: ms.openai_error(503, "overloaded", "server_error"), ms.answering(CAMERAS)
    )
    response = _ask(llm_library, llm_library.app("openai"))
    assert response.status_code == 201
    call = ModelCall.objects.get()
    assert call.transport_retries == 1 and len(openai_server.requests) == 2


ANTHROPIC_FAILURES = [
    ("wrong key", None, "model_auth_failed", 502, "ANTHROPIC_API_KEY", 1),
    (
        "unknown model",
        lambda r: ms.anthropic_error(404, "not_found_error", "model: claude-nope"),
        "model_not_found",
        502,
        "model: claude-nope",
        1,
    ),
    (
        "rate limited",
        lambda r: ms.anthropic_error(429, "rate_limit_error", "Number of requests exceeded"),
        "model_rate_limited",
        503,
        "Number of requests exceeded",
        3,
    ),
    (
        "overloaded",
        lambda r: ms.anthropic_error(529, "overloaded_error", "Overloaded"),
        "model_unavailable",
        502,
        "529 after 3 tries",
        3,
    ),
    (
        "timeout",
        lambda r: _delayed(ms.claude(CAMERAS)(r)),
        "model_timeout",
        504,
        "did not answer within 1 s",
        1,
    ),
    (
        "refusal",
        lambda r: ms.message(r, [], stop_reason="refusal"),
        "model_refused",
        502,
        "refused",
        1,
    ),
    ("empty reply", lambda r: ms.message(r, []), "model_empty_reply", 502, "empty reply", 2),
]


@pytest.mark.parametrize(
    ("script", "code", "status", "words", "requests"),
    [case[1:] for case in ANTHROPIC_FAILURES],
    ids=[case[0] for case in ANTHROPIC_FAILURES],
)
def test_anthropic_failures(
    llm_library: llm_support.Library,
    anthropic_server: ms.Server,
    monkeypatch: pytest.MonkeyPatch,
    *,
    script: ms.Script | None,
    code: str,
    status: int,
    words: str,
    requests: int,
) -> None:
    app = llm_library.app("anthropic", model="claude-nope")
    if script is None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
        script = ms.claude(CAMERAS)
    anthropic_server.script(script)
    _assert_failed(_ask(llm_library, app), code, status, words)
    assert len(anthropic_server.requests) == requests


def test_anthropic_without_a_key(
    llm_library: llm_support.Library, anthropic_server: ms.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    app = llm_library.app("anthropic")
    _assert_failed(_ask(llm_library, app), "model_not_configured", 503, "ANTHROPIC_API_KEY")
