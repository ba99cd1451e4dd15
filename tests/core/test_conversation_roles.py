"""Whose answers, threads and responses a caller reaches, and who may delete them
(core.roles: ``Reach`` and ``Action.DELETE_CONVERSATIONS``).

Issue 57's findings: a viewer or officer key could hide a colleague's response
(``DELETE /v1/responses/{id}`` answered 200, nothing recorded who); a viewer key
read an answer its colleague asked signed in on the web, which the web pages hid,
and viewer and officer keys read and posted into other keys' threads.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse
from pytest_django import DjangoDbBlocker

from audit.ledger import ledger_verify
from audit.models import EvidenceEntry
from citations.models import ConversationDeletion, Message, ResponseRecord, Run, Thread
from citations.services import query_execute
from tests.support.office import QUESTION, Office, office_fixture

pytestmark = pytest.mark.django_db
AGENT = "roles-test/1.0"


@pytest.fixture(scope="module")
def office(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[Office]:
    yield from office_fixture(django_db_blocker)


def _json(client: Client, method: str, path: str, body: object = None) -> Any:
    send = getattr(client, method.lower())
    if body is None:
        return send(path)
    return send(path, json.dumps(body), content_type="application/json")


def _response_of(office: Office, who: str) -> str:
    reply = _json(
        office.rest(who), "POST", "/v1/responses", {"model": str(office.app.pk), "input": QUESTION}
    )
    assert reply.status_code == 200, reply.content
    return reply.json()["id"]


def _thread_of(office: Office, who: str) -> dict[str, str]:
    body = {"messages": [{"role": "user", "content": QUESTION}]}
    thread = _json(office.rest(who), "POST", "/v1/threads", body).json()["id"]
    messages = _json(office.rest(who), "GET", f"/v1/threads/{thread}/messages").json()
    return {"thread": thread, "message": messages["data"][0]["id"]}


# --- finding 3: hiding a colleague's response ------------------------------------------


def test_viewer_and_officer_keys_cannot_hide_a_colleagues_response(office: Office) -> None:
    response_id = _response_of(office, "viewer")
    path = f"/v1/responses/{response_id}"
    for who in ("colleague", "officer", "viewer"):
        refused = _json(office.rest(who), "DELETE", path)
        assert refused.status_code == 403, (who, refused.content)
        assert refused.json()["error"]["type"] == "permission_error"
    assert _json(office.rest("stranger"), "DELETE", path).status_code == 404
    assert _json(office.rest("viewer"), "GET", path).status_code == 200
    assert not ConversationDeletion.objects.exists()


def test_an_editor_hides_a_response_and_the_deletion_is_chained_evidence(office: Office) -> None:
    response_id = _response_of(office, "viewer")
    path = f"/v1/responses/{response_id}"
    editor = office.rest("editor", HTTP_USER_AGENT=AGENT)
    reason = "It quotes a customer's name"
    deleted = _json(editor, "DELETE", path, {"reason": reason})
    assert deleted.status_code == 200, deleted.content
    assert deleted.json() == {"id": response_id, "object": "response", "deleted": True}

    for who in ("viewer", "officer", "admin"):  # hidden from everyone, the asker too
        assert _json(office.rest(who), "GET", path).status_code == 404, who
    record = ResponseRecord.objects.get(pk=response_id)  # marked, not erased
    editor_label = f"api-key:{office.key_rows['editor'].prefix}"
    assert record.deleted_at is not None and record.deleted_by == editor_label
    assert record.query is not None and record.query.quoted_sources.exists()
    event = ConversationDeletion.objects.get(record_id=response_id)
    assert (event.kind, event.actor, event.role, event.reason) == (
        "response",
        editor_label,
        "editor",
        reason,
    )
    assert event.actor_api_key_id == office.key_rows["editor"].pk and event.actor_user_id is None
    assert (event.origin, event.user_agent) == ("127.0.0.1", AGENT)
    assert event.created_at == record.deleted_at
    assert EvidenceEntry.objects.filter(
        record_table=ConversationDeletion._meta.db_table,
        record_id=str(event.pk),
        organization_id=office.acme.pk,
    ).exists()
    assert ledger_verify().ok
    again = _json(editor, "DELETE", path)
    assert again.status_code == 404
    assert ConversationDeletion.objects.filter(record_id=response_id).count() == 1


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"reason": 7}, "invalid_reason"),
        ({"reason": "x" * 2001}, "reason_too_long"),
        (["not", "an", "object"], "invalid_body"),
    ],
)
def test_a_malformed_deletion_is_refused_and_deletes_nothing(
    office: Office, body: object, code: str
) -> None:
    response_id = _response_of(office, "viewer")
    refused = _json(office.rest("editor"), "DELETE", f"/v1/responses/{response_id}", body)
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["code"] == code
    assert ResponseRecord.objects.get(pk=response_id).deleted_at is None
    assert not ConversationDeletion.objects.exists()


def test_a_deletion_record_can_be_neither_changed_nor_removed(office: Office) -> None:
    response_id = _response_of(office, "viewer")
    _json(office.rest("admin"), "DELETE", f"/v1/responses/{response_id}")
    event = ConversationDeletion.objects.get(record_id=response_id)
    for statement in (
        f"UPDATE {ConversationDeletion._meta.db_table} SET reason = 'edited' WHERE id = %s",
        f"DELETE FROM {ConversationDeletion._meta.db_table} WHERE id = %s",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement, [event.pk])
    assert ConversationDeletion.objects.get(pk=event.pk).reason == ""


def test_a_follow_up_response_follows_only_the_callers_own(office: Office) -> None:
    earlier = _response_of(office, "viewer")
    body = {"model": str(office.app.pk), "input": QUESTION, "previous_response_id": earlier}
    for who in ("colleague", "officer", "admin"):
        refused = _json(office.rest(who), "POST", "/v1/responses", body)
        assert refused.status_code == 404, who
        assert refused.json()["error"]["param"] == "previous_response_id"
    assert _json(office.rest("viewer"), "POST", "/v1/responses", body).status_code == 200


# --- finding 4: reading another caller's answers and threads -----------------------------


def _answer_paths(office: Office, query_id: object) -> list[tuple[str, str]]:
    base = f"/semantics/apps/{office.app.pk}"
    return [
        ("GET", f"{base}/query-executions/{query_id}"),
        ("GET", f"{base}/query-executions/{query_id}/validation"),
        ("GET", f"{base}/query-executions/{query_id}/reasoning"),
        ("GET", f"{base}/query-executions/{query_id}/citations.md"),
        ("GET", f"{base}/query-execution-sources/{query_id}/get-quoted-sources"),
        ("POST", f"{base}/query-executions/{query_id}/citations"),
    ]


def test_a_viewer_key_does_not_read_an_answer_a_colleague_asked_on_the_web(
    office: Office,
) -> None:
    asked = query_execute(
        app=office.app, question=QUESTION, user=office.members["viewer"], origin="web"
    )
    assert office.signed_in("viewer").get(reverse("web-answer", args=[asked.pk])).status_code == 200
    for method, path in _answer_paths(office, asked.pk):
        for who in ("viewer", "colleague", "editor"):
            assert _json(office.rest(who), method, path).status_code == 404, (who, path)
        for who in ("officer", "admin"):
            assert _json(office.rest(who), method, path).status_code == 200, (who, path)
        # the asker reaches it through the API too, signed in
        assert _json(office.signed_in("viewer"), method, path).status_code == 200, path
        assert _json(office.rest("stranger"), method, path).status_code == 404, path


def test_a_key_reads_the_answers_it_asked_and_no_member_reads_them_as_theirs(
    office: Office,
) -> None:
    base = f"/semantics/apps/{office.app.pk}/query-executions"
    asked = _json(office.rest("viewer"), "POST", base, {"query": QUESTION})
    assert asked.status_code == 201, asked.content
    query_id = asked.json()["query_id"]
    assert _json(office.rest("viewer"), "GET", f"{base}/{query_id}").status_code == 200
    assert _json(office.rest("colleague"), "GET", f"{base}/{query_id}").status_code == 404
    page = reverse("web-answer", args=[query_id])
    assert office.signed_in("viewer").get(page).status_code == 404  # a key's, not the member's
    assert office.signed_in("officer").get(page).status_code == 200


def test_viewer_and_officer_keys_neither_read_nor_post_into_another_keys_thread(
    office: Office,
) -> None:
    made = _thread_of(office, "viewer")
    thread = f"/v1/threads/{made['thread']}"
    message = {"role": "user", "content": "And after probation?"}
    run = {"assistant_id": str(office.app.pk)}
    for who in ("colleague", "editor"):
        client = office.rest(who)
        assert _json(client, "GET", thread).status_code == 404, who
        assert _json(client, "GET", f"{thread}/messages").status_code == 404, who
        assert _json(client, "GET", f"{thread}/messages/{made['message']}").status_code == 404
        assert _json(client, "GET", f"{thread}/runs").status_code == 404, who
    for who in ("officer", "admin"):  # they audit: they read it, and write nothing in it
        client = office.rest(who)
        assert _json(client, "GET", thread).status_code == 200, who
        assert _json(client, "GET", f"{thread}/messages").status_code == 200, who
    for who in ("colleague", "officer", "editor", "admin", "stranger"):
        client = office.rest(who)
        assert _json(client, "POST", f"{thread}/messages", message).status_code == 404, who
        assert _json(client, "POST", f"{thread}/runs", run).status_code == 404, who
    assert Message.objects.filter(thread_id=made["thread"]).count() == 1
    assert not Run.objects.filter(thread_id=made["thread"]).exists()
    posted = _json(office.rest("viewer"), "POST", f"{thread}/messages", message)
    assert posted.status_code == 200, posted.content


def test_an_editor_deletes_a_thread_which_stays_for_audit(office: Office) -> None:
    made = _thread_of(office, "viewer")
    thread = f"/v1/threads/{made['thread']}"
    for who in ("viewer", "colleague", "officer"):
        assert _json(office.rest(who), "DELETE", thread).status_code == 403, who
    assert _json(office.rest("stranger"), "DELETE", thread).status_code == 404
    admin = office.signed_in("admin")  # a member this time: the actor is the user
    deleted = _json(admin, "DELETE", thread, {"reason": "test thread"})
    assert deleted.status_code == 200, deleted.content
    assert deleted.json() == {"id": made["thread"], "object": "thread.deleted", "deleted": True}
    for who in ("viewer", "officer", "admin"):
        assert _json(office.rest(who), "GET", thread).status_code == 404, who
        assert _json(office.rest(who), "GET", f"{thread}/messages").status_code == 404, who
    row = Thread.objects.get(pk=made["thread"])
    assert row.deleted_at is not None and row.deleted_by == "user:admin-member"
    assert Message.objects.filter(thread=row, deleted_at__isnull=True).count() == 1  # untouched
    event = ConversationDeletion.objects.get(record_id=made["thread"])
    assert (event.kind, event.actor, event.role, event.reason) == (
        "thread",
        "user:admin-member",
        "admin",
        "test thread",
    )
    assert event.actor_user_id == office.members["admin"].pk and event.actor_api_key_id is None


def test_an_editor_deletes_one_message_of_a_thread(office: Office) -> None:
    made = _thread_of(office, "viewer")
    thread = f"/v1/threads/{made['thread']}"
    second = _json(
        office.rest("viewer"), "POST", f"{thread}/messages", {"role": "user", "content": "Why?"}
    ).json()["id"]
    path = f"{thread}/messages/{made['message']}"
    assert _json(office.rest("viewer"), "DELETE", path).status_code == 403
    deleted = _json(office.rest("editor"), "DELETE", path)
    assert deleted.status_code == 200, deleted.content
    assert deleted.json() == {
        "id": made["message"],
        "object": "thread.message.deleted",
        "deleted": True,
    }
    listed = _json(office.rest("viewer"), "GET", f"{thread}/messages").json()
    assert [m["id"] for m in listed["data"]] == [second]
    assert _json(office.rest("viewer"), "GET", path).status_code == 404
    assert Message.objects.get(pk=made["message"]).deleted_at is not None
    event = ConversationDeletion.objects.get(record_id=made["message"])
    assert (event.kind, str(event.thread_id)) == ("message", made["thread"])


def test_a_thread_is_not_deleted_while_a_run_answers_in_it(office: Office) -> None:
    made = _thread_of(office, "viewer")
    thread = f"/v1/threads/{made['thread']}"
    run = _json(
        office.rest("viewer"), "POST", f"{thread}/runs", {"assistant_id": str(office.app.pk)}
    )
    assert run.status_code == 200 and run.json()["status"] == "queued"  # no commit: no worker
    for path in (thread, f"{thread}/messages/{made['message']}"):
        refused = _json(office.rest("editor"), "DELETE", path)
        assert refused.status_code == 400, refused.content
        assert refused.json()["error"]["code"] == "run_active"
    assert Thread.objects.get(pk=made["thread"]).deleted_at is None
    assert not ConversationDeletion.objects.exists()


# --- the web pages read by the same rule --------------------------------------------------


def test_an_officer_reads_a_colleagues_answer_page_but_neither_continues_nor_rates_it(
    office: Office,
) -> None:
    asked = query_execute(
        app=office.app, question=QUESTION, user=office.members["viewer"], origin="web"
    )
    officer = office.signed_in("officer")
    page = officer.get(reverse("web-answer", args=[asked.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="read-only"' in html and 'id="follow-up-form"' not in html
    assert 'id="feedback"' not in html
    source = officer.get(reverse("web-source", args=[asked.pk, "1"]))
    assert source.status_code == 200
    follow_up = officer.post(reverse("web-follow-up", args=[asked.pk]), {"question": "And?"})
    assert follow_up.status_code == 404
    rated = officer.post(reverse("web-feedback", args=[asked.pk]), {"rating": "helpful"})
    assert rated.status_code == 404
    for role in ("editor", "viewer"):
        mine = query_execute(app=office.app, question=QUESTION, user=office.members[role])
        other = "viewer" if role == "editor" else "editor"
        assert office.signed_in(other).get(reverse("web-answer", args=[mine.pk])).status_code == 404
    own = office.signed_in("viewer").get(reverse("web-answer", args=[asked.pk])).content.decode()
    assert 'id="follow-up-form"' in own and 'id="read-only"' not in own


# --- threads made before they had owners ---------------------------------------------------


def test_earlier_threads_get_the_owner_their_label_names(office: Office) -> None:
    migration = importlib.import_module("citations.migrations.0015_conversation_deletions")
    key = office.key_rows["viewer"]
    by_key = Thread.objects.create(organization=office.acme, caller=f"api-key:{key.prefix}")
    by_member = Thread.objects.create(organization=office.acme, caller="user:viewer-member")
    unknown = Thread.objects.create(organization=office.acme, caller="user:nobody-here")
    migration.owners_from_labels(django_apps, None)
    for thread in (by_key, by_member, unknown):
        thread.refresh_from_db()
    assert by_key.caller_api_key_id == key.pk and by_key.caller_user_id is None
    assert by_member.caller_user_id == office.members["viewer"].pk
    assert unknown.caller_user_id is None and unknown.caller_api_key_id is None
    assert _json(office.rest("viewer"), "GET", f"/v1/threads/{by_key.pk}").status_code == 200
