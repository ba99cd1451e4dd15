"""Every changelist of the admin, one test each: its query count does not grow with
the rows it shows, so an N+1 query (a column reading a relation row by row)
cannot creep into any list. The rows are made once, by the real services, in
this process; a newly registered model without rows here fails, not passes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection, models
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django import DjangoDbBlocker

from citations.feedback import feedback_record
from citations.llm_apps import app_create
from citations.responses import services as responses
from citations.services import query_execute
from citations.threads import services as threads
from core.caller import Caller
from core.permissions import Reader
from documents.models import Organization, OrganizationMember
from tests import factories
from tests.citations.llm_support import CAMERAS, CONTRACTS, POLICIES, ingest
from tests.citations.steps_support import LEAVE, SECURITY, TRAVEL, TWO_FACTS
from tests.support import model_servers

MIN_ROWS = 3  # every changelist lists at least this many rows; one is shown, then all
QUESTIONS = (
    "How many days of annual leave do full-time employees receive?",
    "How often must passwords be changed?",
    "Who may book first class train tickets?",
)
LLM_QUESTION = "How long are camera recordings and customer contracts kept?"

ADMINS = sorted(admin.site._registry, key=lambda model: model._meta.label)
assert ADMINS, "no registered admin: the tests below would check nothing"


@dataclass
class Rows:
    client: Client  # a superuser's: every organization's rows are listed


def _members(orgs: list) -> None:
    for n, org in enumerate(orgs):
        user = get_user_model().objects.create_user(f"member{n}", password="pass-123-xyz")
        OrganizationMember.objects.create(organization=org, user=user)
        factories.api_key(org)


def _answers(org: Organization, tmp: Path) -> None:
    """Single, stepped and model answers, thread runs, feedback and evaluation runs."""
    single = app_create(organization=org, name="Single", data_source_names=["Policies"])
    stepped = app_create(
        organization=org, name="Stepped", data_source_names=["Policies"], reasoning="steps"
    )
    model = app_create(
        organization=org,
        name="Model",
        data_source_names=["Policies"],
        generator="openai",
        model="gpt-test",
    )
    answers = [query_execute(app=single, question=q) for q in QUESTIONS]
    for _ in range(MIN_ROWS):
        query_execute(app=stepped, question=TWO_FACTS)
        query_execute(app=model, question=LLM_QUESTION)
    reader = get_user_model().objects.get(username="member0")
    for answer, rating in zip(answers, ("helpful", "not_helpful", "helpful"), strict=True):
        feedback_record(execution=answer, user=reader, rating=rating)
    for question in QUESTIONS:
        thread = threads.thread_create(organization=org)
        threads.message_create(thread=thread, role="user", content=question)
        threads.run_execute(run_id=str(threads.run_create(thread=thread, app=single).pk))
        body = {"model": str(single.pk), "input": question}
        request = responses.response_request_parse(
            organization=org, body=body, reader=Reader.nobody()
        )
        started = responses.response_start(
            organization=org, request=request, user=None, api_key=None
        )
        responses.response_execute(response_id=started.pk)
        # a deletion record per thread (the thread stays, marked)
        editor = Caller(user=None, api_key=None, organization=org, origin="127.0.0.1")
        threads.thread_delete(thread=thread, caller=editor, role="editor", reason="seed")
    gold = tmp / "gold.jsonl"
    gold.write_text("".join(json.dumps({"question": q}) + "\n" for q in QUESTIONS))
    for n in range(MIN_ROWS):
        call_command(
            "evaluate",
            app="Single",
            organization=org.name,
            gold=str(gold),
            seeds=1,
            out=str(tmp / str(n)),
        )


def _seed(tmp: Path) -> None:
    orgs = [factories.organization(name) for name in ("Acme", "Globex", "Initech")]
    for org in orgs:
        factories.data_source(org, "Policies")
    _members(orgs)
    for name in ("Auditors", "Readers", "Writers"):
        Group.objects.get_or_create(name=name)
    source = factories.data_source(orgs[0], "Policies")
    for name, text in (
        ("leave-policy.md", LEAVE),
        ("security-policy.md", SECURITY),
        ("travel-policy.md", TRAVEL),
        ("records-policy.md", POLICIES),
    ):
        ingest(source, name, text)
    _answers(orgs[0], tmp)


@pytest.fixture(scope="module")
def rows(
    django_db_setup: None,
    django_db_blocker: DjangoDbBlocker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Rows]:
    with (
        django_db_blocker.unblock(),
        model_servers.openai_server() as server,
        pytest.MonkeyPatch.context() as patch,
        override_settings(PROVENANCE_LLM_BACKOFF_SECONDS=0.01, PROVENANCE_LLM_TIMEOUT_SECONDS=1),
    ):
        patch.setenv("OPENAI_API_KEY", model_servers.KEY)
        patch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        server.script(model_servers.answering(CAMERAS, CONTRACTS))
        call_command("flush", interactive=False, verbosity=0)
        try:
            _seed(tmp_path_factory.mktemp("evaluations"))
            root = get_user_model().objects.create_superuser("root", password="pass-123-xyz")
            client = Client()
            client.force_login(root)
            yield Rows(client=client)
        finally:
            call_command("flush", interactive=False, verbosity=0)


def _queries(client: Client, url: str) -> tuple[int, ChangeList]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    assert response.context_data is not None
    return len(queries), response.context_data["cl"]


@pytest.mark.django_db
@pytest.mark.parametrize("model", ADMINS, ids=lambda model: model._meta.label)
def test_the_changelist_query_count_does_not_grow_with_its_rows(
    rows: Rows, model: type[models.Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    model_admin = admin.site._registry[model]
    rows.client.get(url)  # caches (content types, permissions) warmed: not counted
    monkeypatch.setattr(model_admin, "list_per_page", 1)
    one, changelist = _queries(rows.client, url)
    total = changelist.result_count
    assert total >= MIN_ROWS, f"{meta.label}: {total} rows; give _seed() {MIN_ROWS} of them"
    assert len(changelist.result_list) == 1
    monkeypatch.setattr(model_admin, "list_per_page", total)
    every, changelist = _queries(rows.client, url)
    assert len(changelist.result_list) == total
    assert every <= one, f"{meta.label}: {one} queries for 1 row, {every} for {total}"
