"""A stepped run in the Assistants wire format, read by the official ``openai``
package against a live server and a real worker: one ``file_search`` run step per
reasoning step (its results name each source; their content on request), then the
``message_creation`` step; bad ``include[]``, unknown ids and other tenants refused."""

from __future__ import annotations

from typing import Final

import openai
import pytest
from openai.types.beta.threads.runs import (
    FileSearchToolCall,
    MessageCreationStepDetails,
    RunStep,
    ToolCallsStepDetails,
)
from openai.types.beta.threads.runs.file_search_tool_call import FileSearchResult
from pytest_django.live_server_helper import LiveServer

from citations.models import ReasoningStep
from tests import factories
from tests.citations.steps_support import LEAVE, SECURITY, TRAVEL, TWO_FACTS
from tests.support.worker import WorkerProcess
from tests.threads.conftest import Http, Tenant, tenant_with

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning"),
]

CONTENT: Final = "step_details.tool_calls[*].file_search.results[*].content"


def _file_search(step: RunStep) -> FileSearchToolCall:
    """The first tool call of a ``tool_calls`` step, a file search."""
    assert isinstance(step.step_details, ToolCallsStepDetails), step.step_details
    call = step.step_details.tool_calls[0]
    assert isinstance(call, FileSearchToolCall), call
    return call


def _results(step: RunStep) -> list[FileSearchResult]:
    results = _file_search(step).file_search.results
    assert results is not None, step
    return results


def _stepped_tenant(name: str = "Initech") -> Tenant:
    tenant = tenant_with(
        name,
        {
            "leave-policy.md": LEAVE.encode(),
            "security-policy.md": SECURITY.encode(),
            "travel-policy.md": TRAVEL.encode(),
        },
    )
    tenant.app.reasoning = "steps"
    tenant.app.save(update_fields=["reasoning"])
    return tenant


def _run(
    client: openai.OpenAI, app_id: str, question: str
) -> tuple[openai.types.beta.Thread, openai.types.beta.threads.Run]:
    thread = client.beta.threads.create()
    client.beta.threads.messages.create(thread_id=thread.id, role="user", content=question)
    run = client.beta.threads.runs.create_and_poll(
        thread_id=thread.id, assistant_id=app_id, timeout=90
    )
    assert run.status == "completed", run.last_error
    return thread, run


def test_the_openai_client_lists_the_steps_of_a_stepped_run(
    celery_worker: WorkerProcess, live_server: LiveServer
) -> None:
    tenant = _stepped_tenant()
    client = openai.OpenAI(api_key=tenant.key, base_url=f"{live_server.url}/v1", max_retries=0)
    thread, run = _run(client, str(tenant.app.pk), TWO_FACTS)

    listed = client.beta.threads.runs.steps.list(
        run_id=run.id, thread_id=thread.id, order="asc", include=[CONTENT]
    )

    steps = listed.data
    assert [s.type for s in steps] == ["tool_calls", "tool_calls", "message_creation"]
    assert all(s.object == "thread.run.step" and s.status == "completed" for s in steps)
    assert all(s.run_id == run.id and s.thread_id == thread.id for s in steps)
    stored = list(
        ReasoningStep.objects.filter(query_id=(run.model_extra or {})["query_id"]).order_by(
            "step_number"
        )
    )
    files = {name: f.pk for name, f in tenant.files.items()}
    for step, reasoning_step in zip(steps[:2], stored, strict=True):
        assert isinstance(step.step_details, ToolCallsStepDetails), step.step_details
        (call,) = step.step_details.tool_calls
        assert isinstance(call, FileSearchToolCall), call
        assert call.type == "file_search" and call.file_search.results
        assert step.metadata is not None
        assert step.metadata["question"] == reasoning_step.question
        assert step.metadata["intermediate_answer"] == reasoning_step.intermediate_answer
        for result in call.file_search.results:
            assert result.content is not None
            assert 0 <= result.score <= 1 and result.content[0].type == "text"
            assert result.file_name in files and result.file_id == str(files[result.file_name])
        cited = {str(a.file_id) for a in reasoning_step.source_attributions.all()}
        assert cited <= {r.file_id for r in call.file_search.results}
    leave, passwords = (_results(s)[0] for s in steps[:2])
    assert leave.file_name == "leave-policy.md" and passwords.file_name == "security-policy.md"
    assert leave.content and "twenty-five days" in (leave.content[0].text or "")
    messages = client.beta.threads.messages.list(thread_id=thread.id, run_id=run.id)
    assert isinstance(steps[2].step_details, MessageCreationStepDetails), steps[2].step_details
    assert steps[2].step_details.message_creation.message_id == messages.data[0].id

    # without include[], no content; newest first by default; one step by its id
    plain = client.beta.threads.runs.steps.list(run_id=run.id, thread_id=thread.id)
    assert [s.id for s in plain.data] == [s.id for s in reversed(steps)]
    assert all(r.content is None for s in plain.data if s.type == "tool_calls" for r in _results(s))
    one = client.beta.threads.runs.steps.retrieve(
        step_id=steps[1].id, run_id=run.id, thread_id=thread.id, include=[CONTENT]
    )
    assert one.id == steps[1].id and _results(one)[0].content
    page = client.beta.threads.runs.steps.list(
        run_id=run.id, thread_id=thread.id, order="asc", limit=1, after=steps[0].id
    )
    assert [s.id for s in page.data] == [steps[1].id] and page.has_more

    # bad input, unknown ids and another tenant
    http = Http(live_server.url, tenant.key)
    base = f"/v1/threads/{thread.id}/runs/{run.id}/steps"
    refused = http.get(f"{base}?include[]=step_details.secrets")
    assert refused.status == 400 and refused.json()["error"]["code"] == "invalid_include"
    assert refused.json()["error"]["param"] == "include"
    assert http.get(f"{base}?limit=0").json()["error"]["code"] == "invalid_limit"
    assert http.get(f"{base}?after=nope").json()["error"]["code"] == "invalid_cursor"
    missing = http.get(f"{base}/00000000-0000-0000-0000-000000000000")
    assert missing.status == 404 and missing.json()["error"]["param"] == "step_id"
    assert http.get(f"/v1/threads/{thread.id}/runs/not-a-run/steps").status == 404
    other = Http(live_server.url, factories.api_key(factories.organization("Globex")))
    assert other.get(base).status == 404
    assert Http(live_server.url, None).get(base).status == 401


def test_a_single_step_run_has_one_file_search_step(
    celery_worker: WorkerProcess, live_server: LiveServer
) -> None:
    tenant = _stepped_tenant("Umbrella")
    tenant.app.reasoning = "single"
    tenant.app.save(update_fields=["reasoning"])
    client = openai.OpenAI(api_key=tenant.key, base_url=f"{live_server.url}/v1", max_retries=0)
    thread, run = _run(client, str(tenant.app.pk), TWO_FACTS)

    steps = client.beta.threads.runs.steps.list(run_id=run.id, thread_id=thread.id, order="asc")

    assert [s.type for s in steps.data] == ["tool_calls", "message_creation"]
    results = _results(steps.data[0])
    assert {r.file_name for r in results} >= {"leave-policy.md", "security-policy.md"}
