"""Stepped answers with the LLM generators, the real SDKs against local servers
speaking the providers' wire formats: the model proposes the steps as JSON, each
step is retrieved for and answered under the citation contract, every call is
evidence, and a reply that holds no usable steps falls back to one step, saying why."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_django import Settings

from citations.generators import ModelError
from citations.models import ClaimCheck, ModelCall, QueryExecution, ReasoningStep
from citations.reasoning.proposals import PLAN_SYSTEM
from citations.services import query_execute
from tests.citations import llm_support, steps_support
from tests.citations.steps_support import LEAVE_FACT, PASSWORD_FACT, TWO_FACTS
from tests.citations.test_steps_extractive import assert_step_invariants
from tests.support import model_servers as ms

steps_library = steps_support.steps_library
fast_retries = llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server

LEAVE = ("Full-time employees get twenty-five days of annual leave a year.", LEAVE_FACT)
PASSWORDS = ("Passwords must be changed every ninety days.", PASSWORD_FACT)
PLAN_MARK = PLAN_SYSTEM.split(".")[0]  # "You plan how a question … will be looked up"
STEPS: dict[str, Any] = {
    "steps": [
        {"question": "How many days of annual leave do full-time employees get?", "uses": []},
        {"question": "How often must passwords be changed?", "uses": [1]},
    ]
}


def _system(request: dict[str, Any]) -> str:
    if isinstance(request.get("system"), str):
        return request["system"]
    return next((m["content"] for m in request.get("messages", []) if m["role"] == "system"), "")


def _asked(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


def openai_model(plan: str) -> Callable[[dict[str, Any]], ms.Reply]:
    """Plans with ``plan``; answers the leave or the password step with its claim."""

    def reply(request: dict[str, Any]) -> ms.Reply:
        if PLAN_MARK in _system(request):
            return ms.chat_completion(request, plan)
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        question = user.split("\n", 1)[0]  # "Question: …", then the delimited snippets
        claim = LEAVE if "annual leave" in question else PASSWORDS
        return ms.answering(claim)(request)

    return reply


def claude_model(plan: str) -> Callable[[dict[str, Any]], ms.Reply]:
    def reply(request: dict[str, Any]) -> ms.Reply:
        if PLAN_MARK in _system(request):
            return ms.message(request, [{"type": "text", "text": plan}])
        question = request["messages"][0]["content"][-1]["text"]
        return ms.claude(LEAVE if "annual leave" in question else PASSWORDS)(request)

    return reply


def _steps(execution: QueryExecution) -> list[ReasoningStep]:
    return list(ReasoningStep.objects.filter(query=execution).order_by("step_number"))


def test_the_model_proposes_the_steps_and_each_is_answered_with_its_own_sources(
    steps_library: steps_support.StepsLibrary, openai_server: ms.Server
) -> None:
    openai_server.script(openai_model(json.dumps(STEPS)))
    app = steps_library.app("openai", model="gpt-test")

    execution = query_execute(app=app, question=TWO_FACTS)

    assert execution.status == "completed", execution.error_message
    plan_request = openai_server.requests[0]
    assert PLAN_MARK in _system(plan_request) and TWO_FACTS in _asked(plan_request)
    assert plan_request["response_format"] == {"type": "json_object"}
    first, second = _steps(execution)
    assert [first.question, second.question] == [s["question"] for s in STEPS["steps"]]
    assert first.proposed_by == second.proposed_by == "model"
    assert (
        second.uses_steps == [1] and first.intermediate_answer.split(" [")[0] in second.search_text
    )
    assert first.intermediate_answer == f"{LEAVE[0]} [1]"
    assert second.intermediate_answer == f"{PASSWORDS[0]} [1]"
    assert execution.answer == f"{LEAVE[0]} [1] {PASSWORDS[0]} [2]"
    assert {a.file_id for a in first.source_attributions.all()} == {steps_library.leave.pk}
    assert {a.file_id for a in second.source_attributions.all()} == {steps_library.security.pk}
    # every call is evidence: the plan is attempt 1, then each step's calls
    calls = list(ModelCall.objects.filter(query=execution).order_by("attempt"))
    assert [c.attempt for c in calls] == [1, 2, 3]
    assert [c.prompt for c in calls] == openai_server.requests
    assert first.model_call_attempts == [2] and second.model_call_attempts == [3]
    checks = list(ClaimCheck.objects.filter(query=execution).order_by("id"))
    assert [c.model_call.attempt for c in checks] == [2, 3]
    assert all(c.supported and c.claim is not None for c in checks)
    claims = [c.claim for c in checks if c.claim is not None]  # all of them, as asserted
    assert [c.reply_sentence for c in claims] == [LEAVE[0], PASSWORDS[0]]
    assert_step_invariants(execution)


@pytest.mark.parametrize(
    ("plan", "code"),
    [
        ("Step 1: look up the leave. Step 2: look up the passwords.", "invalid_json"),
        ('{"steps": "leave, then passwords"}', "no_steps"),
        ('{"steps": [{"question": ""}, {"question": "   "}]}', "empty_steps"),
    ],
)
def test_malformed_steps_fall_back_to_one_step_and_the_trace_says_why(
    steps_library: steps_support.StepsLibrary, openai_server: ms.Server, plan: str, code: str
) -> None:
    openai_server.script(openai_model(plan))

    execution = query_execute(app=steps_library.app("openai"), question=TWO_FACTS)

    assert execution.status == "completed", execution.error_message
    (step,) = _steps(execution)
    assert step.question == TWO_FACTS and step.proposed_by == "fallback"
    assert "fell back to one step" in step.reasoning_trace and f"({code})" in step.reasoning_trace
    plan_call = ModelCall.objects.get(query=execution, attempt=1)
    assert (
        ms.completion_received(plan_call.raw_response)["choices"][0]["message"]["content"] == plan
    )
    assert step.model_call_attempts == [2] and step.outcome == "answered"
    assert_step_invariants(execution)


def test_more_steps_than_allowed_are_capped(
    steps_library: steps_support.StepsLibrary, openai_server: ms.Server, settings: Settings
) -> None:
    settings.PROVENANCE_REASONING_MAX_STEPS = 1
    openai_server.script(openai_model(json.dumps(STEPS)))

    execution = query_execute(app=steps_library.app("openai"), question=TWO_FACTS)

    (step,) = _steps(execution)
    assert "capped at 1 steps" in step.reasoning_trace
    assert "How often must passwords be changed?" in step.reasoning_trace
    assert "at most 1 steps" in _system(openai_server.requests[0]).replace("At most", "at most")


def test_a_failing_plan_request_fails_the_answer_with_the_reason(
    steps_library: steps_support.StepsLibrary, openai_server: ms.Server
) -> None:
    openai_server.script(lambda request: ms.openai_error(500, "boom", "server_error"))

    with pytest.raises(ModelError) as failed:
        query_execute(app=steps_library.app("openai"), question=TWO_FACTS)

    assert failed.value.code == "model_unavailable"
    execution = QueryExecution.objects.get(question=TWO_FACTS)
    assert execution.status == "failed" and "model_unavailable" not in execution.answer
    assert "500" in execution.error_message
    assert not ReasoningStep.objects.filter(query=execution).exists()


def test_anthropic_proposes_fenced_json_steps(
    steps_library: steps_support.StepsLibrary, anthropic_server: ms.Server
) -> None:
    anthropic_server.script(claude_model("```json\n" + json.dumps(STEPS) + "\n```"))
    app = steps_library.app("anthropic", model="claude-test")

    execution = query_execute(app=app, question=TWO_FACTS)

    assert execution.status == "completed", execution.error_message
    first, second = _steps(execution)
    assert first.proposed_by == "model" and len(anthropic_server.requests) == 3
    assert PLAN_MARK in anthropic_server.requests[0]["system"]
    assert execution.answer == f"{LEAVE[0]} [1] {PASSWORDS[0]} [2]"
    calls = ModelCall.objects.filter(query=execution).order_by("attempt")
    assert [(c.attempt, c.provider) for c in calls] == [
        (1, "anthropic"),
        (2, "anthropic"),
        (3, "anthropic"),
    ]
    assert_step_invariants(execution)
