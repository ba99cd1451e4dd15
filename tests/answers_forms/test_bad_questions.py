"""Bad input to the answer path (issue 55): an empty or 10,000-character question, a
question in a script the analyzer does not stem, and a table of 5,000 rows each get a
clear answer or a clear error over REST, never a 5xx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.management import call_command
from pytest_django import DjangoDbBlocker
from rest_framework.test import APIClient

from citations.composition import NOT_FOUND
from citations.llm_apps import app_create
from citations.models import App
from citations.services.questions import MAX_QUESTION_CHARS
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

pytestmark = pytest.mark.django_db

ROWS = 5000


def _table() -> bytes:
    """A register of 5,000 parts, each row unique."""
    lines = ["# Parts register", "", "| Part | Bin | Stock | Supplier |", "|---|---|---|---|"]
    lines += [
        f"| P-{n:05d} | B{n % 97:02d}-{n % 13} | {n * 7 % 1000} | Supplier {n % 41} |"
        for n in range(ROWS)
    ]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def asked(
    django_db_setup: None, django_db_blocker: DjangoDbBlocker, celery_worker: WorkerProcess
) -> Iterator[tuple[APIClient, App]]:
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
        org = factories.organization("Parts")
        source = factories.data_source(org, "Parts")
        record = factories.upload(source, "parts.md", _table()).file
        assert wait_for_status(record.pk, timeout=600).status == "ready", record.error_message
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.api_key(org)}")
        yield client, app_create(organization=org, name="Parts", data_source_names=["Parts"])
        call_command("flush", interactive=False, verbosity=0)


def _ask(asked: tuple[APIClient, App], question: object) -> tuple[int, dict]:
    client, app = asked
    response = client.post(
        f"/semantics/apps/{app.pk}/query-executions", {"query": question}, format="json"
    )
    return response.status_code, response.json()


def test_a_row_of_a_five_thousand_row_table_answers_its_question(
    asked: tuple[APIClient, App],
) -> None:
    status, body = _ask(asked, "What is the stock of part P-04321?")
    assert status == 201, body
    assert "P-04321" in body["answer"] and "[1]" in body["answer"], body["answer"]


@pytest.mark.parametrize(
    ("question", "code"),
    [("", "empty_query"), ("   ", "empty_query"), (42, "invalid_query"), (None, "invalid_query")],
)
def test_an_empty_or_mistyped_question_is_a_clear_400(
    asked: tuple[APIClient, App], question: object, code: str
) -> None:
    status, body = _ask(asked, question)
    assert status == 400, body
    assert body["error"]["code"] == code, body


def test_a_ten_thousand_character_question_is_answered_or_refused_clearly(
    asked: tuple[APIClient, App],
) -> None:
    question = ("Which supplier delivers part P-00042 to bin B42-3? " * 200)[:10_000]
    status, body = _ask(asked, question)
    if len(question.strip()) > MAX_QUESTION_CHARS:
        assert status == 400 and body["error"]["code"] == "query_too_long", body
    else:
        assert status == 201 and body["answer"], body


@pytest.mark.parametrize(
    "question",
    ["ชิ้นส่วน P-00042 อยู่ที่ไหน", "भाग P-00042 का स्टॉक कितना है?", "部品P-00042の在庫は？"],
)
def test_a_question_in_a_script_the_analyzer_does_not_stem_gets_an_answer(
    asked: tuple[APIClient, App], question: str
) -> None:
    status, body = _ask(asked, question)
    assert status == 201, body
    assert body["answer"] == NOT_FOUND or "[1]" in body["answer"], body["answer"]
