"""`create_app` and `ask` from the command line."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from citations.models import App
from tests.citations.conftest import Library

pytestmark = pytest.mark.django_db


def test_create_app_prints_its_id_last(library: Library) -> None:
    out = StringIO()
    call_command(
        "create_app",
        "Helpdesk",
        "--organization",
        "Acme",
        "--data-source",
        "Handbook",
        "--data-source",
        "SQuAD",
        "--public",
        stdout=out,
    )
    app = App.objects.get(pk=out.getvalue().strip().splitlines()[-1])
    assert app.is_public and app.name == "Helpdesk"
    assert set(app.data_sources.values_list("name", flat=True)) == {"Handbook", "SQuAD"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["X", "--organization", "Nope", "--data-source", "Handbook"], "unknown organization"),
        (["X", "--organization", "Acme", "--data-source", "Nope"], "unknown data source"),
        (["HR", "--organization", "Acme", "--data-source", "Handbook"], "already exists"),
    ],
)
def test_create_app_refuses_bad_input(library: Library, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("create_app", *args, stdout=StringIO())


def test_ask_prints_the_answer_and_each_source_with_page_lines_and_section(
    library: Library,
) -> None:
    out = StringIO()
    call_command(
        "ask", "Within what time must security incidents be reported?", "--app", "HR", stdout=out
    )
    text = out.getvalue()
    assert "within one hour" in text and "[1]" in text
    assert "[1] security-policy.pdf (rev 1), p. 3, lines " in text
    assert "section: Incident Response" in text


def test_ask_json_and_errors(library: Library) -> None:
    out = StringIO()
    call_command(
        "ask",
        "How long are invoices kept?",
        "--app",
        str(library.handbook.pk),
        "--json",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    assert data["sources"][0]["document"] == "employee-handbook.md"
    assert data["claims"][0]["quoted_as"] == "1"
    with pytest.raises(CommandError, match="unknown app"):
        call_command("ask", "anything", "--app", "Nope", stdout=StringIO())
    with pytest.raises(CommandError, match="--app is required"):
        call_command("ask", "anything", stdout=StringIO())
    with pytest.raises(CommandError, match="must not be empty"):
        call_command("ask", "  ", "--app", "HR", stdout=StringIO())
