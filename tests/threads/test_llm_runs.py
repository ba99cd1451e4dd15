"""Thread runs with a model generator: the run's instructions reach the model, the
run reports the model and the tokens it spent, and a model failure ends the run
``failed`` with a ``last_error`` saying what happened."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from citations.models import App, Message, MessageRole, QueryExecution, RunStatus
from citations.threads import services
from core.api_keys import api_key_verify
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS
from tests.support import model_servers as ms

# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server


def _run(library: llm_support.Library, app: App, **options: Any) -> dict[str, Any]:
    owner = api_key_verify(presented=library.key)  # the key reads its own thread
    thread = services.thread_create(organization=library.organization, api_key=owner)
    services.message_create(thread=thread, role="user", content="How long are recordings kept?")
    run = services.run_create(thread=thread, app=app, **options)
    services.run_execute(run_id=str(run.pk))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    return client.get(f"/v1/threads/{thread.pk}/runs/{run.pk}").json()


def test_a_run_s_instructions_reach_the_model_and_usage_is_real(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(ms.answering(CAMERAS))
    app = llm_library.app("openai", model="gpt-test", prompt="The app's own prompt.")
    run = _run(llm_library, app, instructions="Answer like a records manager.")

    assert run["status"] == "completed", run["last_error"]
    system = openai_server.requests[0]["messages"][0]["content"]
    assert system.startswith("Answer like a records manager.")
    assert "The app's own prompt." not in system and "cite before you explain" in system
    assert run["model"] == "gpt-test"
    assert run["usage"] == {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876}
    answer = Message.objects.get(role=MessageRole.ASSISTANT)
    assert answer.content == f"{CAMERAS[0]} [1]"
    [annotation] = answer.annotations
    assert answer.content[annotation["start_index"] : annotation["end_index"]] == "[1]"


def test_without_instructions_the_app_s_prompt_is_the_system_prompt(
    llm_library: llm_support.Library, anthropic_server: ms.Server
) -> None:
    anthropic_server.script(ms.claude(CAMERAS))
    app = llm_library.app("anthropic", model="claude-test", prompt="The app's own prompt.")
    run = _run(llm_library, app)
    assert run["status"] == "completed"
    assert anthropic_server.requests[0]["system"].startswith("The app's own prompt.")
    assert run["usage"]["total_tokens"] == 1540 + 96


@pytest.mark.parametrize(
    ("script", "code", "words"),
    [
        (
            lambda r: ms.openai_error(404, "The model does not exist", "invalid_request_error"),
            "server_error",
            "model_not_found",
        ),
        (
            lambda r: ms.openai_error(429, "Rate limit reached", "requests"),
            "rate_limit_exceeded",
            "model_rate_limited",
        ),
        (lambda r: ms.chat_completion(r, "not json"), "server_error", "model_invalid_reply"),
    ],
)
def test_a_model_failure_fails_the_run_with_its_reason(
    llm_library: llm_support.Library,
    openai_server: ms.Server,
    script: ms.Script,
    code: str,
    words: str,
) -> None:
    openai_server.script(script)
    run = _run(llm_library, llm_library.app("openai"))
    assert run["status"] == RunStatus.FAILED
    assert run["last_error"]["code"] == code and words in run["last_error"]["message"]
    execution = QueryExecution.objects.get()
    assert execution.status == "failed" and words in run["last_error"]["message"]
    assert not Message.objects.filter(role=MessageRole.ASSISTANT).exists()
