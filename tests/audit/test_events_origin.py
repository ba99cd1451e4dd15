"""Every upload, download, deletion and answer records the client's address and
User-Agent, whichever surface it came through (REST, web pages, the admin, a
command: no address, "manage.py <command>"); the agent is kept as text to read,
cut to MAX_USER_AGENT_CHARS, shown escaped to officers, and chained."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client
from rest_framework.test import APIClient

from audit.ledger import _value, ledger_verify
from audit.models import DocumentEvent, EvidenceEntry
from citations.llm_apps import app_create
from citations.models import App, QueryExecution, Run
from citations.threads.services import run_execute
from core.user_agents import MAX_USER_AGENT_CHARS
from documents.models import DataSource, File, Organization, OrganizationMember
from tests import factories
from tests.web.conftest import REMOTE_WORK, ingest_now, member_of, signed_in

pytestmark = pytest.mark.django_db

ADDRESS = "198.51.100.23"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"
CLIENT = "openai-python/1.99 (integration test)"
HOSTILE = "<script>alert('ua')</script>\x00\x1b[2J\u202etxt.exe" + "A" * 600


@dataclass
class Library:
    org: Organization
    editor: User
    source: DataSource
    app: App
    key: str


@pytest.fixture
def library(db: None) -> Library:
    """Acme with an editor, a Handbook data source, an HR app over it and an editor key."""
    org = factories.organization("Acme")
    source = factories.data_source(org, "Handbook")
    return Library(
        org=org,
        editor=member_of(org, "alice"),
        source=source,
        app=app_create(organization=org, name="HR", data_source_names=["Handbook"]),
        key=factories.api_key(org),
    )


def _api(key: str, agent: str = CLIENT) -> APIClient:
    client = APIClient(REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=agent)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _officer(org: Organization, agent: str = BROWSER) -> Client:
    """A compliance officer of ``org`` in the admin."""
    user = get_user_model().objects.create_user(
        "olivia", password="officer-pass-123", is_staff=True
    )
    OrganizationMember.objects.create(organization=org, user=user, role="officer")
    client = Client(REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=agent)
    client.force_login(user)
    return client


def _event(kind: str) -> DocumentEvent:
    return DocumentEvent.objects.filter(kind=kind).latest("created_at")


def _handbook(library: Library) -> File:
    return ingest_now(factories.upload(library.source, "remote.md", REMOTE_WORK).file)


def test_a_rest_upload_records_the_address_and_user_agent(library: Library) -> None:
    upload = SimpleUploadedFile("remote.md", REMOTE_WORK)
    response = _api(library.key).post(
        "/v1/flow/files", {"data_source": "Handbook", "file": upload}, format="multipart"
    )
    assert response.status_code == 202, response.content
    event = _event("upload")
    assert (event.origin, event.user_agent) == (ADDRESS, CLIENT)
    assert event.actor.startswith("api-key:")


def test_a_web_upload_records_the_address_and_user_agent(library: Library) -> None:
    client = signed_in(library.editor, REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    response = client.post(
        "/library/", {"data_source": "Handbook", "files": [SimpleUploadedFile("a.md", b"# A\n")]}
    )
    assert response.status_code == 303
    event = _event("upload")
    assert (event.origin, event.user_agent, event.actor) == (ADDRESS, BROWSER, "user:alice")


def test_a_rest_download_records_the_address_and_user_agent(library: Library) -> None:
    record = factories.upload(library.source, "remote.md", REMOTE_WORK).file
    response = _api(library.key).get(f"/v1/flow/files/{record.pk}/content")
    assert response.status_code == 200
    event = _event("download")
    assert (event.origin, event.user_agent) == (ADDRESS, CLIENT)


def test_an_admin_download_records_the_officers_address_and_user_agent(library: Library) -> None:
    record = factories.upload(library.source, "remote.md", REMOTE_WORK).file
    response = _officer(library.org).get(f"/admin/documents/file/{record.pk}/download/")
    assert response.status_code == 200
    event = _event("download")
    assert (event.origin, event.user_agent, event.actor) == (ADDRESS, BROWSER, "user:olivia")


def test_a_web_download_records_the_address_and_user_agent(library: Library) -> None:
    record = factories.upload(library.source, "remote.md", REMOTE_WORK).file
    client = signed_in(library.editor, REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    assert client.get(f"/library/files/{record.pk}/download").status_code == 200
    event = _event("download")
    assert (event.origin, event.user_agent, event.actor) == (ADDRESS, BROWSER, "user:alice")


def _failed(library: Library) -> File:
    record = factories.upload(library.source, "remote.md", REMOTE_WORK).file
    File.objects.filter(pk=record.pk).update(status="failed", error_message="worker lost")
    return record


def test_a_web_retry_is_recorded_with_the_address_and_user_agent(library: Library) -> None:
    record = _failed(library)
    client = signed_in(library.editor, REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    assert client.post(f"/library/files/{record.pk}/retry").status_code == 303
    event = _event("retry")
    assert (event.origin, event.user_agent, event.actor) == (ADDRESS, BROWSER, "user:alice")
    assert File.objects.get(pk=record.pk).status == "pending"
    client.post(f"/library/files/{record.pk}/retry")  # not failed any more: nothing recorded
    assert DocumentEvent.objects.filter(kind="retry").count() == 1


def test_an_admin_retry_is_recorded_with_the_address_and_user_agent(library: Library) -> None:
    record = _failed(library)
    operator = get_user_model().objects.create_superuser("root", password="root-pass-123456")
    client = Client(REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    client.force_login(operator)
    response = client.post(
        "/admin/documents/file/",
        {"action": "retry_failed", "_selected_action": [str(record.pk)]},
    )
    assert response.status_code == 302
    event = _event("retry")
    assert (event.origin, event.user_agent, event.actor) == (ADDRESS, BROWSER, "user:root")


def test_a_command_records_no_address_and_its_own_name(library: Library, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_bytes(b"# Notes\n\nParking is free.\n")
    path, source = str(tmp_path / "notes.md"), "Handbook"
    call_command(
        "ingest", path, "--data-source", source, "--organization", "Acme", stdout=io.StringIO()
    )
    event = _event("upload")
    assert (event.origin, event.user_agent, event.actor) == (None, "manage.py ingest", "system")


def test_a_hostile_user_agent_is_cut_and_stored_as_text(library: Library) -> None:
    upload = SimpleUploadedFile("remote.md", REMOTE_WORK)
    response = _api(library.key, agent=HOSTILE).post(
        "/v1/flow/files", {"data_source": "Handbook", "file": upload}, format="multipart"
    )
    assert response.status_code == 202, response.content
    stored = _event("upload").user_agent
    assert len(stored) == MAX_USER_AGENT_CHARS
    # the NUL PostgreSQL refuses, the terminal escape and the bidi override each show as
    # U+FFFD; the markup stays as the client wrote it
    assert stored.startswith("<script>alert('ua')</script>\ufffd\ufffd[2J\ufffdtxt.exe")
    assert stored.endswith("A" * 10)


def test_the_admin_shows_a_hostile_user_agent_escaped(library: Library) -> None:
    _api(library.key, agent=HOSTILE).post(
        "/v1/flow/files",
        {"data_source": "Handbook", "file": SimpleUploadedFile("remote.md", REMOTE_WORK)},
        format="multipart",
    )
    officer, event = _officer(library.org), _event("upload")
    listing = officer.get("/admin/audit/documentevent/").content.decode()
    page = officer.get(f"/admin/audit/documentevent/{event.pk}/change/").content.decode()
    for html in (listing, page):
        assert "&lt;script&gt;alert(&#x27;ua&#x27;)&lt;/script&gt;" in html
        assert "<script>alert(" not in html
    assert ADDRESS in listing and "A" * 400 in page  # the list cuts it, the page has it all
    found = officer.get("/admin/audit/documentevent/", {"q": ADDRESS}).content.decode()
    assert "&lt;script&gt;" in found


def _canonical_without(record: DocumentEvent, *columns: str) -> bytes:
    """The row's canonical content as the ledger computed it before ``columns`` existed."""
    fields = {
        f.attname: _value(getattr(record, f.attname))
        for f in record._meta.concrete_fields
        if f.attname not in columns
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()


def _content_hash(record: DocumentEvent) -> str:
    return EvidenceEntry.objects.get(
        record_table="audit_documentevent", record_id=record.pk
    ).content_hash


def test_an_event_without_an_agent_hashes_as_before_the_column(library: Library) -> None:
    factories.upload(library.source, "remote.md", REMOTE_WORK)  # a task's way: no agent
    event = _event("upload")
    assert event.user_agent == ""
    expected = hashlib.sha256(_canonical_without(event, "user_agent")).hexdigest()
    assert _content_hash(event) == expected
    assert ledger_verify().ok


def test_the_agent_is_chained_and_an_edit_to_it_is_caught(library: Library) -> None:
    _api(library.key).get(f"/v1/flow/files/{_handbook(library).pk}/content")
    event = _event("download")
    assert (
        _content_hash(event) != hashlib.sha256(_canonical_without(event, "user_agent")).hexdigest()
    )
    assert ledger_verify().ok
    with connection.cursor() as cursor:  # as a superuser who switched the triggers off
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("UPDATE audit_documentevent SET user_agent = '' WHERE id = %s", [event.pk])
        cursor.execute("SET LOCAL session_replication_role = origin")
    verdict = ledger_verify()
    assert not verdict.ok and "the record was edited" in verdict.problem


QUESTION = "How many days per week may employees work remotely?"


@pytest.fixture
def ingested(library: Library) -> Library:
    _handbook(library)
    return library


def _answer() -> QueryExecution:
    return QueryExecution.objects.latest("created_at")


def test_a_rest_deletion_records_the_address_and_user_agent(ingested: Library) -> None:
    record = File.objects.get(name="remote.md")
    response = _api(ingested.key).delete(
        f"/v1/flow/files/{record.pk}", {"reason": "withdrawn"}, format="json"
    )
    assert response.status_code == 200, response.content
    event = _event("deletion")
    assert (event.origin, event.user_agent, event.reason) == (ADDRESS, CLIENT, "withdrawn")


def test_a_web_deletion_records_the_address_and_user_agent(ingested: Library) -> None:
    record = File.objects.get(name="remote.md")
    client = signed_in(ingested.editor, REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    response = client.post(f"/library/documents/{record.document_id}/delete/", {"reason": "old"})
    assert response.status_code == 303
    event = _event("deletion")
    assert (event.origin, event.user_agent, event.actor) == (ADDRESS, BROWSER, "user:alice")


def test_a_rest_answer_records_the_address_and_user_agent(ingested: Library) -> None:
    response = _api(ingested.key).post(
        f"/semantics/apps/{ingested.app.pk}/query-executions", {"query": QUESTION}, format="json"
    )
    assert response.status_code == 201, response.content
    answer = _answer()
    assert (answer.caller_address, answer.caller_user_agent, answer.origin) == (
        ADDRESS,
        CLIENT,
        "api",
    )


def test_a_web_answer_and_its_follow_up_record_the_address_and_user_agent(
    ingested: Library,
) -> None:
    client = signed_in(ingested.editor, REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    asked = client.post("/", {"app": str(ingested.app.pk), "question": QUESTION})
    assert asked.status_code == 303
    first = _answer()
    assert (first.caller_address, first.caller_user_agent, first.origin) == (
        ADDRESS,
        BROWSER,
        "web",
    )
    later = signed_in(ingested.editor, REMOTE_ADDR="2001:db8::7", HTTP_USER_AGENT="Other/2")
    followed = later.post(f"/answers/{first.pk}/follow-up/", {"question": "And the equipment?"})
    assert followed.status_code == 303
    second = _answer()
    assert second.pk != first.pk
    assert (second.caller_address, second.caller_user_agent) == ("2001:db8::7", "Other/2")


def test_a_streamed_web_answer_records_the_address_and_user_agent(ingested: Library) -> None:
    client = signed_in(ingested.editor, REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=BROWSER)
    response = client.post("/ask/stream/", {"app": str(ingested.app.pk), "question": QUESTION})
    b"".join(response.streaming_content)  # type: ignore[attr-defined]
    answer = _answer()
    assert (answer.caller_address, answer.caller_user_agent) == (ADDRESS, BROWSER)


def test_a_thread_run_records_the_address_and_user_agent_of_its_request(
    ingested: Library,
) -> None:
    client = _api(ingested.key)
    body = {"messages": [{"role": "user", "content": QUESTION}]}
    thread = client.post("/v1/threads", body, format="json").json()
    created = client.post(
        f"/v1/threads/{thread['id']}/runs", {"assistant_id": str(ingested.app.pk)}, format="json"
    )
    assert created.status_code == 200, created.content
    run_execute(run_id=created.json()["id"])  # what the worker does, later, without a request
    run = Run.objects.select_related("query").get(pk=created.json()["id"])
    assert run.query is not None
    assert (run.query.caller_address, run.query.caller_user_agent, run.query.origin) == (
        ADDRESS,
        CLIENT,
        "thread",
    )


def test_a_response_records_the_address_and_user_agent(ingested: Library) -> None:
    body = {"model": str(ingested.app.pk), "input": QUESTION}
    response = _api(ingested.key).post("/v1/responses", body, format="json")
    assert response.status_code == 200, response.content
    answer = _answer()
    assert (answer.caller_address, answer.caller_user_agent, answer.origin) == (
        ADDRESS,
        CLIENT,
        "response",
    )


def test_the_ask_command_records_no_address_and_its_own_name(ingested: Library) -> None:
    call_command("ask", QUESTION, "--app", str(ingested.app.pk), stdout=io.StringIO())
    answer = _answer()
    assert (answer.caller_address, answer.caller_user_agent, answer.origin) == (
        None,
        "manage.py ask",
        "cli",
    )


def test_officers_read_where_an_answer_came_from(ingested: Library) -> None:
    _api(ingested.key, agent=HOSTILE).post(
        f"/semantics/apps/{ingested.app.pk}/query-executions", {"query": QUESTION}, format="json"
    )
    answer, officer = _answer(), _officer(ingested.org)
    page = officer.get(f"/admin/citations/queryexecution/{answer.pk}/change/").content.decode()
    listing = officer.get("/admin/citations/queryexecution/", {"q": ADDRESS}).content.decode()
    assert ADDRESS in page and ADDRESS in listing and QUESTION[:40] in listing
    assert "&lt;script&gt;alert(&#x27;ua&#x27;)&lt;/script&gt;" in page
    assert "<script>alert(" not in page
    assert len(answer.caller_user_agent) == MAX_USER_AGENT_CHARS


def test_an_answers_address_and_agent_are_chained(ingested: Library) -> None:
    _api(ingested.key).post(
        f"/semantics/apps/{ingested.app.pk}/query-executions", {"query": QUESTION}, format="json"
    )
    answer = _answer()
    assert ledger_verify().ok
    with connection.cursor() as cursor:  # as a superuser who switched the triggers off
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE citations_queryexecution SET caller_address = '192.0.2.1' WHERE id = %s",
            [answer.pk],
        )
        cursor.execute("SET LOCAL session_replication_role = origin")
    verdict = ledger_verify()
    assert not verdict.ok and "the record was edited" in verdict.problem


def test_completing_an_answer_cannot_change_where_it_came_from(ingested: Library) -> None:
    """The complete-once trigger: an answer is chained when it completes, so its
    address and agent are frozen from the moment it is asked."""
    running = QueryExecution.objects.create(
        app=ingested.app,
        organization=ingested.org,
        question=QUESTION,
        caller_address=ADDRESS,
        caller_user_agent=CLIENT,
    )
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        QueryExecution.objects.filter(pk=running.pk).update(
            status="completed", caller_user_agent="forged"
        )
    QueryExecution.objects.filter(pk=running.pk).update(status="failed")  # allowed as before
