"""Managing the library by role (issue 33): search and filters, the upload form
and the retry and delete controls only for roles that may edit (a viewer gets 403
on every write), the one-file JSON upload behind the drop zone, the origin address
recorded on web uploads, and a waiting file's place in the ingestion queue."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from audit.models import DocumentEvent
from documents.models import DocumentMarkdown, File
from documents.queue import queue_places
from tests import factories
from tests.web.conftest import REMOTE_WORK, Tenant, member_of, signed_in

pytestmark = pytest.mark.django_db


def _names(client: Client, query: str) -> list[str]:
    response = client.get(f"/library/{query}")
    assert response.status_code == 200
    rows = response.content.decode().split('<tr id="file-')[1:]
    return sorted(row.split("<strong>")[1].split("</strong>")[0] for row in rows)


def test_it_searches_by_name_and_filters_by_status_kind_and_source(tenant: Tenant) -> None:
    legal = factories.data_source(tenant.org, "Legal")
    factories.upload(tenant.source, "remote.md", REMOTE_WORK)
    factories.upload(tenant.source, "Parking.txt", b"Parking is free.\n")
    contract = factories.upload(legal, "contract.md", b"# Contract\n").file
    File.objects.filter(pk=contract.pk).update(status="failed", error_message="x")
    client = tenant.client
    assert _names(client, "") == ["Parking.txt", "contract.md", "remote.md"]
    assert _names(client, "?name=PARK") == ["Parking.txt"]
    assert _names(client, "?status=failed") == ["contract.md"]
    assert _names(client, "?status=pending&kind=markdown") == ["remote.md"]
    assert _names(client, f"?data_source={legal.pk}") == ["contract.md"]
    assert _names(client, "?data_source=not-a-uuid") == []
    body = client.get("/library/?name=nothing-like-this").content.decode()
    assert "No file matches these filters" in body
    assert (
        '<option value="failed" selected>failed</option>'
        in client.get("/library/?status=failed").content.decode()
    )


def test_the_pager_keeps_the_filters(tenant: Tenant, monkeypatch: pytest.MonkeyPatch) -> None:
    from documents.web import selectors

    monkeypatch.setattr(selectors, "FILES_PER_PAGE", 1)
    for name in ("a.md", "b.md"):
        factories.upload(tenant.source, name, f"# {name}\n".encode())
    body = tenant.client.get("/library/?kind=markdown").content.decode()
    assert 'href="?kind=markdown&amp;page=2"' in body


def test_deleted_documents_are_a_filter(tenant: Tenant) -> None:
    record = factories.upload(tenant.source, "old.md", b"# Old\n").file
    factories.upload(tenant.source, "new.md", b"# New\n")
    File.objects.filter(pk=record.pk).update(deleted_at=timezone.now(), deletion_reason="old")
    assert _names(tenant.client, "?status=deleted") == ["old.md"]


def test_a_viewer_reads_but_sees_no_upload_form_and_may_not_write(tenant: Tenant) -> None:
    record = factories.upload(tenant.source, "remote.md", REMOTE_WORK).file
    File.objects.filter(pk=record.pk).update(status="failed", error_message="parser crashed")
    viewer = signed_in(member_of(tenant.org, "victor", "viewer"))
    body = viewer.get("/library/").content.decode()
    assert "remote.md" in body and f"/library/files/{record.pk}/download" in body
    assert 'id="upload-form"' not in body and "Upload documents" not in body
    assert f"/library/files/{record.pk}/retry" not in body and "Delete…" not in body
    page = viewer.get(f"/library/documents/{record.document_id}/").content.decode()
    assert "remote.md" in page and 'id="delete-document"' not in page
    writes = [
        ("/library/", {"data_source": "Handbook", "files": [SimpleUploadedFile("x.md", b"# X\n")]}),
        (
            "/library/upload/",
            {"data_source": "Handbook", "file": SimpleUploadedFile("y.md", b"#\n")},
        ),
        (f"/library/files/{record.pk}/retry", {}),
        (f"/library/documents/{record.document_id}/delete/", {"reason": "because"}),
    ]
    for url, data in writes:
        response = viewer.post(url, data)
        assert response.status_code == 403, url
        assert b"Editor" in response.content, url
    assert viewer.get(f"/library/documents/{record.document_id}/delete/").status_code == 403
    assert File.objects.count() == 1 and File.objects.get().status == "failed"
    assert File.objects.get().deleted_at is None
    # an editor sees every control
    body = tenant.client.get("/library/").content.decode()
    assert 'id="upload-form"' in body and "Delete…" in body


def test_an_officer_reads_the_library_without_controls(tenant: Tenant) -> None:
    factories.upload(tenant.source, "remote.md", REMOTE_WORK)
    officer = signed_in(member_of(tenant.org, "olga", "officer"))
    body = officer.get("/library/").content.decode()
    assert "remote.md" in body and 'id="upload-form"' not in body


def test_the_one_file_upload_answers_json_for_each_outcome(tenant: Tenant) -> None:
    def send(name: str, data: bytes, source: str = "Handbook") -> tuple[int, dict]:
        response = tenant.client.post(
            "/library/upload/",
            {"data_source": source, "file": SimpleUploadedFile(name, data)},
            REMOTE_ADDR="192.0.2.7",
            HTTP_USER_AGENT="DropZone/1.0",
        )
        return response.status_code, response.json()

    status, body = send("remote.md", REMOTE_WORK)
    record = File.objects.get(name="remote.md")
    assert status == 201 and body["result"] == "uploaded" and body["revision"] == 1
    assert body["url"] == f"/library/documents/{record.document_id}/"
    assert body["message"] == "remote.md uploaded as revision 1; ingestion has started."
    status, body = send("remote.md", REMOTE_WORK)
    assert status == 200 and body["result"] == "duplicate"
    status, body = send("tool.exe", b"# Not really\n")
    assert status == 415 or status == 400
    assert body["result"] == "refused" and "files named *.exe are not accepted" in body["message"]
    status, body = send("a.md", b"# A\n", source="Nope")
    assert status == 400 and "unknown data source" in body["message"]
    assert tenant.client.post("/library/upload/", {"data_source": "Handbook"}).status_code == 400
    event = DocumentEvent.objects.get(kind="upload")
    assert (event.file_id, event.actor, event.origin) == (record.pk, "user:alice", "192.0.2.7")
    assert event.user_agent == "DropZone/1.0"


def test_the_upload_form_records_the_origin_address_and_user_agent(tenant: Tenant) -> None:
    tenant.client.post(
        "/library/",
        {"data_source": "Handbook", "files": [SimpleUploadedFile("a.md", b"# A\n")]},
        REMOTE_ADDR="198.51.100.23",
        HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64)",
    )
    event = DocumentEvent.objects.get(kind="upload")
    assert (event.origin, event.user_agent) == ("198.51.100.23", "Mozilla/5.0 (X11; Linux x86_64)")


def test_a_waiting_file_shows_how_many_files_are_ahead_of_it(tenant: Tenant) -> None:
    """Workers take files first in, first out across organizations: another
    tenant's earlier file counts (its name is never shown); files converted again
    wait on the background queue and do not count."""
    other = factories.data_source(factories.organization("Globex"), "Secret")
    earlier = factories.upload(other, "theirs.md", b"# Theirs\n").file
    first = factories.upload(tenant.source, "first.md", b"# First\n").file
    second = factories.upload(tenant.source, "second.md", b"# Second\n").file
    working = factories.upload(tenant.source, "busy.md", b"# Busy\n").file
    File.objects.filter(pk=working.pk).update(status="embedding")
    places = queue_places(File.objects.filter(pk__in=[earlier.pk, first.pk, second.pk]))
    assert [places[f.pk].ahead for f in (earlier, first, second)] == [0, 1, 2]
    assert places[second.pk].working == 1
    assert places[second.pk].words == "2 files ahead of this one; 1 being processed now"
    body = tenant.client.get("/library/").content.decode()
    assert "2 files ahead of this one" in body and "1 file ahead of this one" in body
    assert "theirs.md" not in body
    page = tenant.client.get(f"/library/documents/{second.document_id}/").content.decode()
    assert "2 files ahead of this one; 1 being processed now" in page
    # a retried file goes to the back of the queue
    File.objects.filter(pk=first.pk).update(updated_at=timezone.now())
    assert queue_places([File.objects.get(pk=first.pk)])[first.pk].ahead == 2
    # ready, failed and deleted files have no place
    File.objects.filter(pk=earlier.pk).update(deleted_at=timezone.now())
    assert queue_places(File.objects.filter(pk=earlier.pk)) == {}
    assert queue_places([File.objects.get(pk=second.pk)])[second.pk].ahead == 0
    # a file converted again (it has a published conversion) waits on the other queue
    again = factories.upload(tenant.source, "again.md", b"# Again\n").file
    DocumentMarkdown.objects.create(
        file=again, converter="md", converter_version="1", markdown="", sha256="", is_active=True
    )
    places = queue_places(File.objects.filter(pk__in=[first.pk, again.pk]))
    assert (places[first.pk].ahead, places[again.pk].ahead) == (1, 0)  # second, then first
