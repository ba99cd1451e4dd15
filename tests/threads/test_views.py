"""The thread list endpoints (messages, runs, a run's steps): their query count does
not grow with the rows they list, so an N+1 query cannot creep in. Runs are
answered in-process by ``run_execute``, as the worker would."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from citations.models import App, ReasoningStep, Run, Thread
from citations.threads import services
from core.api_keys import api_key_verify
from tests.citations import steps_support
from tests.citations.steps_support import ONE_FACT, TWO_FACTS

pytestmark = pytest.mark.django_db

steps_library = steps_support.steps_library

QUESTIONS = (
    "How many days of annual leave do full-time employees receive?",
    "How often must passwords be changed?",
    "Where are visitor badges returned?",
    "When must a sick employee notify the line manager?",
    "Who may book first class train tickets?",
)


def _turn(thread: Thread, app: App, question: str) -> Run:
    services.message_create(thread=thread, role="user", content=question)
    run = services.run_create(thread=thread, app=app)
    services.run_execute(run_id=str(run.pk))
    run.refresh_from_db()
    assert run.status == "completed", run.error_message
    return run


def _listed(client: Client, path: str) -> tuple[int, int]:
    """(queries, rows) of one GET of a list; the first GET warms caches, uncounted."""
    client.get(path)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(queries), len(response.json()["data"])


@pytest.fixture
def conversation(steps_library: steps_support.StepsLibrary) -> tuple[App, Thread, Client]:
    app = steps_library.app(name="Single", reasoning="single")
    key = api_key_verify(presented=steps_library.key)  # its thread: the key reads it
    thread = services.thread_create(organization=steps_library.organization, api_key=key)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {steps_library.key}")
    return app, thread, client


@pytest.mark.parametrize(("path", "per_turn"), [("messages", 2), ("runs", 1)])
def test_a_thread_list_query_count_does_not_grow_with_its_rows(
    conversation: tuple[App, Thread, Client], path: str, per_turn: int
) -> None:
    app, thread, client = conversation
    url = f"/v1/threads/{thread.pk}/{path}?limit=100"
    _turn(thread, app, QUESTIONS[0])
    few, rows = _listed(client, url)
    assert rows == per_turn
    for question in QUESTIONS[1:]:
        _turn(thread, app, question)
    many, rows = _listed(client, url)
    assert rows == per_turn * len(QUESTIONS)
    assert many <= few, f"{path}: {few} queries for {per_turn} rows, {many} for {rows}"


def test_a_run_s_steps_query_count_does_not_grow_with_its_steps(
    steps_library: steps_support.StepsLibrary,
) -> None:
    app = steps_library.app(name="Stepped")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {steps_library.key}")
    counted = {}
    for question in (ONE_FACT, TWO_FACTS):
        thread = services.thread_create(
            organization=steps_library.organization,
            api_key=api_key_verify(presented=steps_library.key),
        )
        run = _turn(thread, app, question)
        steps = ReasoningStep.objects.filter(query=run.query_id).count()
        url = f"/v1/threads/{thread.pk}/runs/{run.pk}/steps?limit=100&include[]=" + (
            "step_details.tool_calls[*].file_search.results[*].content"
        )
        queries, rows = _listed(client, url)
        assert rows == steps + 1  # a file_search step per reasoning step, then the message
        counted[steps] = queries
    assert sorted(counted) == [1, 2], counted
    assert counted[2] <= counted[1], f"queries by reasoning steps: {counted}"
