"""Run lifecycle, tested through the services (the worker calls the same
``run_execute``): claimed once, cancellable until finished, recorded like any
query execution and shown in the compliance admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from citations.composition import NOT_FOUND
from citations.llm_apps import app_create
from citations.models import App, Message, MessageRole, QueryExecution, Run, RunStatus, Thread
from citations.threads import selectors, services
from citations.threads.errors import ThreadRejected
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def app() -> App:
    org = factories.organization("Acme")
    factories.data_source(org, "Policies")  # empty: answers are "not found", still recorded
    return app_create(organization=org, name="Assistant", data_source_names=["Policies"])


def _queued_run(app: App, question: str = "What is the retention period?") -> Run:
    thread = services.thread_create(organization=app.organization)
    services.message_create(thread=thread, role="user", content=question)
    return services.run_create(thread=thread, app=app)


def test_it_answers_once_however_often_the_task_is_delivered(app: App) -> None:
    run = _queued_run(app)
    services.run_execute(run_id=str(run.pk))
    services.run_execute(run_id=str(run.pk))  # a duplicate delivery
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.completed_at and run.started_at
    execution = QueryExecution.objects.get()
    assert (execution.origin, execution.question, execution.answer) == (
        "thread",
        "What is the retention period?",
        NOT_FOUND,
    )
    assert run.query == execution
    answer = Message.objects.get(role=MessageRole.ASSISTANT)
    assert (answer.run, answer.query, answer.content) == (run, execution, NOT_FOUND)
    assert answer.metadata["query_id"] == str(execution.pk)


def test_a_queued_run_is_cancelled_and_never_executed(app: App) -> None:
    run = services.run_cancel(run=_queued_run(app))
    assert run.status == RunStatus.CANCELLED and run.cancelled_at
    services.run_execute(run_id=str(run.pk))
    assert not QueryExecution.objects.exists()
    with pytest.raises(ThreadRejected) as refused:
        services.run_cancel(run=run)
    assert refused.value.code == "run_not_cancellable"


def test_a_running_run_is_cancelling_until_its_worker_stops(app: App) -> None:
    run = _queued_run(app)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.IN_PROGRESS, started_at=timezone.now())
    assert services.run_cancel(run=run).status == RunStatus.CANCELLING
    assert services.run_cancel(run=run).status == RunStatus.CANCELLING  # idempotent
    services.run_fail(run_id=str(run.pk), code="server_error", message="worker stopped")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and not Message.objects.filter(run=run).exists()


def test_a_finished_run_cannot_be_cancelled(app: App) -> None:
    run = _queued_run(app)
    services.run_execute(run_id=str(run.pk))
    with pytest.raises(ThreadRejected) as refused:
        services.run_cancel(run=run)
    assert (refused.value.code, refused.value.status) == ("run_not_cancellable", 400)
    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED


def test_a_run_whose_worker_died_is_claimed_again(app: App) -> None:
    run = _queued_run(app)
    long_ago = timezone.now() - timedelta(days=1)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.IN_PROGRESS, started_at=long_ago)
    services.run_execute(run_id=str(run.pk))
    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED


def test_a_follow_up_is_searched_with_the_earlier_questions_and_cited_sections(app: App) -> None:
    thread = services.thread_create(organization=app.organization)
    services.message_create(thread=thread, role="user", content="Who operates the cameras?")
    Message.objects.create(
        thread=thread,
        role=MessageRole.ASSISTANT,
        content="The security desk operates the cameras. [1]",
        sources=[
            {"section": "Video Surveillance Policy > Scope", "quoted_as": "1"},
            {"section": "Customer Contract Policy > Scope", "quoted_as": None},
        ],
    )
    follow_up = services.message_create(
        thread=thread, role="user", content="What about its retention period?"
    )
    assert selectors.retrieval_context(question=follow_up) == (
        "Who operates the cameras?\nVideo Surveillance Policy > Scope"
    )
    first = Message.objects.filter(thread=thread).order_by("created_at").first()
    assert first is not None
    assert selectors.retrieval_context(question=first) == ""


def test_thread_answers_show_in_the_compliance_admin(app: App, client: Client) -> None:
    run = _queued_run(app, "How long are camera recordings kept?")
    services.run_execute(run_id=str(run.pk))
    officer = get_user_model().objects.create_superuser("officer", "o@example.com", "pw")
    client.force_login(officer)
    listed = client.get("/admin/citations/queryexecution/?origin=thread")
    assert listed.status_code == 200 and b"How long are camera recordings kept?" in listed.content
    thread = Thread.objects.get()
    for path in [
        f"/admin/citations/thread/{thread.pk}/change/",
        f"/admin/citations/run/{run.pk}/change/",
        "/admin/citations/run/",
        "/admin/citations/message/",
    ]:
        assert client.get(path).status_code == 200, path
