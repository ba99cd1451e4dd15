"""A document's page in the library (issue 33): revisions with who, when, sha256,
size and status; the chunks of a revision with their locations; the answers that
cite it, scoped like the answer pages (officers see everyone's); downloads of each
revision recorded with the caller's address; deletion with a reason, refused
without one; another organization's document is 404."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client
from pytest_django import DjangoAssertNumQueries

from audit.models import DocumentEvent
from citations.models import QueryExecution
from citations.services import query_execute
from documents.ingestion.delete import MAX_REASON_CHARS
from documents.models import File
from tests import factories
from tests.support.http import streamed
from tests.web.conftest import REMOTE_WORK, Tenant, ingest_now, member_of, signed_in

pytestmark = pytest.mark.django_db

QUESTION = "How many days per week may employees work remotely?"
EDITED = REMOTE_WORK.replace(b"two days per week", b"three days per week")


def _page(client: Client, record: File, query: str = "") -> str:
    response = client.get(f"/library/documents/{record.document_id}/{query}")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _second_revision(tenant: Tenant) -> File:
    return ingest_now(factories.upload(tenant.source, "remote.md", EDITED).file)


def test_it_lists_every_revision_with_who_when_hash_and_status(
    tenant: Tenant, remote_work: File
) -> None:
    second = _second_revision(tenant)
    body = _page(tenant.client, remote_work)
    assert "<h1>remote.md</h1>" in body and "2 revisions" in body
    assert body.index('id="revision-2"') < body.index('id="revision-1"'), "newest first"
    for record in (remote_work, second):
        assert record.sha256 in body and f"({record.size} bytes)" in body
        assert f'href="/library/files/{record.pk}/download"' in body
    assert '<span class="badge ready">current</span>' in body and ">superseded<" in body
    assert body.count("by alice") == 0  # uploaded by the factory: nobody signed in
    assert "by the system" in body
    # the library links each row to its document page
    library = tenant.client.get("/library/").content.decode()
    assert f'href="/library/documents/{remote_work.document_id}/"' in library


def test_it_names_the_member_who_uploaded_and_the_failure_reason(tenant: Tenant) -> None:
    tenant.client.post("/library/", {"data_source": "Handbook", "files": [_file("bad.pdf")]})
    record = File.objects.get(name="bad.pdf")
    File.objects.filter(pk=record.pk).update(status="failed", error_message="the PDF is broken")
    body = _page(tenant.client, record)
    assert "by alice" in body and "the PDF is broken" in body
    assert "has no chunks: its ingestion failed" in body


def _file(name: str, data: bytes = b"%PDF-1.4\n%\xe2\xe3\n1 0 obj<<>>endobj\n") -> object:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


def test_it_lists_the_chunks_with_their_locations_page_by_page(
    tenant: Tenant, remote_work: File
) -> None:
    body = _page(tenant.client, remote_work)
    chunks = list(remote_work.chunks.filter(markdown__is_active=True).order_by("position"))
    assert chunks and f"{len(chunks)} chunk" in body
    first = chunks[0]
    assert f'id="chunk-{first.position}"' in body
    lines = f"lines {first.line_number_start}–{first.line_number_end}"
    assert lines in body or f"line {first.line_number_start}" in body
    for heading in first.hierarchy:
        assert f"<li>{heading}</li>" in body
    assert "Employees may work remotely two days per week" in body


def test_the_chunks_are_paginated_and_each_revision_has_its_own(
    tenant: Tenant, remote_work: File, monkeypatch: pytest.MonkeyPatch
) -> None:
    from documents.web import selectors

    second = _second_revision(tenant)
    monkeypatch.setattr(selectors, "CHUNKS_PER_PAGE", 1)
    body = _page(tenant.client, remote_work, "?revision=1&chunks=2")
    monkeypatch.undo()
    assert "Chunks of revision 1" in body and "Page 2 of" in body
    assert 'id="chunk-0"' not in body and 'id="chunk-1"' in body
    current = _page(tenant.client, second)
    assert "Chunks of revision 2" in current and "three days per week" in current
    assert (
        tenant.client.get(f"/library/documents/{second.document_id}/?revision=9").status_code == 404
    )


def test_it_lists_the_answers_citing_it_mine_only_unless_an_officer(
    tenant: Tenant, remote_work: File
) -> None:
    mine = query_execute(app=tenant.app, question=QUESTION, user=tenant.user, origin="web")
    bob = member_of(tenant.org, "bob", "viewer")
    theirs = query_execute(app=tenant.app, question="Who approves remote days?", user=bob)
    assert mine.quoted_sources.filter(file=remote_work).exists()
    assert theirs.quoted_sources.filter(file=remote_work).exists()
    body = _page(tenant.client, remote_work)
    assert "Your answers that cite it" in body
    assert f'href="/answers/{mine.pk}/"' in body and "Who approves remote days?" not in body
    officer = signed_in(member_of(tenant.org, "olga", "officer"))
    seen = _page(officer, remote_work)
    assert "Answers that cite it" in seen and "by every member" in seen
    assert QUESTION in seen and "Who approves remote days?" in seen
    assert f"/admin/citations/queryexecution/{theirs.pk}/change/" in seen
    assert "user:bob" in seen


def test_a_download_is_byte_for_byte_and_recorded_with_address_and_agent(
    tenant: Tenant, remote_work: File
) -> None:
    second = _second_revision(tenant)
    for record, data in ((remote_work, REMOTE_WORK), (second, EDITED)):
        response = tenant.client.get(
            f"/library/files/{record.pk}/download",
            REMOTE_ADDR="203.0.113.9",
            HTTP_USER_AGENT="curl/8.5",
        )
        assert response.status_code == 200
        body = streamed(response)
        assert body == data and hashlib.sha256(body).hexdigest() == record.sha256
        assert response["X-Content-SHA256"] == record.sha256
        assert 'filename="remote.md"' in response["Content-Disposition"]
    events = DocumentEvent.objects.filter(kind="download").order_by("created_at")
    assert [(e.file_id, e.actor, e.origin, e.user_agent) for e in events] == [
        (remote_work.pk, "user:alice", "203.0.113.9", "curl/8.5"),
        (second.pk, "user:alice", "203.0.113.9", "curl/8.5"),
    ]


def test_it_deletes_with_a_reason_after_a_confirmation(tenant: Tenant, remote_work: File) -> None:
    second = _second_revision(tenant)
    answer = query_execute(app=tenant.app, question=QUESTION, user=tenant.user)
    page = f"/library/documents/{remote_work.document_id}/"
    assert 'id="delete-document"' in _page(tenant.client, remote_work)
    confirm = tenant.client.get(f"{page}delete/")
    assert confirm.status_code == 200
    assert b"Reason for deleting" in confirm.content and b"kept as evidence" in confirm.content

    refused = tenant.client.post(f"{page}delete/", {"reason": "   "})
    assert refused.status_code == 400 and b'role="alert"' in refused.content
    assert not File.objects.filter(deleted_at__isnull=False).exists()
    assert not DocumentEvent.objects.filter(kind="deletion").exists()

    # a reason past the ledger's limit is refused whole, never cut (as the REST API does)
    too_long = tenant.client.post(f"{page}delete/", {"reason": "x" * (MAX_REASON_CHARS + 1)})
    assert too_long.status_code == 400 and b"at most 2000 characters" in too_long.content
    assert not File.objects.filter(deleted_at__isnull=False).exists()

    deleted = tenant.client.post(
        f"{page}delete/",
        {"reason": "Replaced by the 2027 charter"},
        REMOTE_ADDR="198.51.100.4",
        HTTP_USER_AGENT="Firefox/140",
    )
    assert deleted.status_code == 303 and deleted["Location"] == page
    assert File.objects.filter(document_id=remote_work.document_id, deleted_at=None).count() == 0
    event = DocumentEvent.objects.get(kind="deletion")
    assert (event.file_id, event.reason) == (second.pk, "Replaced by the 2027 charter")
    assert (event.actor, event.origin, event.user_agent) == (
        "user:alice",
        "198.51.100.4",
        "Firefox/140",
    )
    body = _page(tenant.client, remote_work)
    assert "was deleted on" in body and "Replaced by the 2027 charter" in body
    assert 'id="delete-document"' not in body
    # evidence kept: the answer still lists its source, the bytes still download
    assert QueryExecution.objects.get(pk=answer.pk).quoted_sources.exists()
    assert tenant.client.get(f"/library/files/{second.pk}/download").status_code == 200
    again = tenant.client.post(f"{page}delete/", {"reason": "twice"}, follow=True)
    assert b"was already deleted" in again.content
    assert DocumentEvent.objects.filter(kind="deletion").count() == 1


def test_another_organizations_document_is_not_found(tenant: Tenant) -> None:
    other = factories.organization("Globex")
    theirs = factories.upload(factories.data_source(other, "Secret"), "secret.md", b"# S\n").file
    for url in (
        f"/library/documents/{theirs.document_id}/",
        f"/library/documents/{theirs.document_id}/delete/",
        f"/library/files/{theirs.pk}/download",
        "/library/documents/not-a-uuid/",
    ):
        assert tenant.client.get(url).status_code == 404, url
    response = tenant.client.post(
        f"/library/documents/{theirs.document_id}/delete/", {"reason": "mine now"}
    )
    assert response.status_code == 404
    assert File.objects.get(pk=theirs.pk).deleted_at is None
    assert not DocumentEvent.objects.filter(kind__in=["download", "deletion"]).exists()


def test_the_document_page_query_count_does_not_grow_with_revisions(
    tenant: Tenant, remote_work: File, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    query_execute(app=tenant.app, question=QUESTION, user=tenant.user)
    url = f"/library/documents/{remote_work.document_id}/"
    with django_assert_max_num_queries(20) as few:
        tenant.client.get(url)
    baseline = len(few.captured_queries)
    for n in range(3):
        ingest_now(factories.upload(tenant.source, "remote.md", EDITED + b"\n" * (n + 1)).file)
        query_execute(app=tenant.app, question=f"{QUESTION} ({n})", user=tenant.user)
    factories.upload(tenant.source, "remote.md", EDITED + b"pending\n")  # waits in the queue
    with django_assert_max_num_queries(baseline + 1):  # + the waiting revision's place
        body = tenant.client.get(url).content.decode()
    assert "5 revisions" in body and "next in line" in body
