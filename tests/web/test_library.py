"""Library page: empty and busy states, multi-file upload with reasons for
rejected files, failed files with their reason and a retry, tenancy, CSRF."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pytest_django import DjangoAssertNumQueries, Settings

from documents import ingestion
from documents.models import File
from documents.web.selectors import library_busy, library_page
from tests import factories
from tests.web.conftest import REMOTE_WORK, Tenant, member_of, signed_in

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse


pytestmark = pytest.mark.django_db


def _upload(
    client: Client, *files: SimpleUploadedFile, source: str = "Handbook"
) -> _MonkeyPatchedWSGIResponse:
    return client.post("/library/", {"data_source": source, "files": list(files)}, follow=True)


def test_it_sends_anonymous_visitors_to_sign_in(db: None) -> None:
    for url in ("/", "/library/", "/history/"):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")


def test_it_signs_in_with_the_login_form(tenant: Tenant) -> None:
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="csrfmiddlewaretoken"' in page.content
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "correct horse battery staple"}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    wrong = Client().post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert wrong.status_code == 200 and b'role="alert"' in wrong.content


def test_it_tells_a_user_without_organization(db: None) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("loner", "l@example.com", "pw-123456789")
    response = signed_in(user).get("/library/")
    assert response.status_code == 403
    assert b"not a member of any organization" in response.content


def test_it_shows_the_empty_library(tenant: Tenant) -> None:
    response = tenant.client.get("/library/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "The library is empty" in body
    assert 'aria-current="page"' in body and 'http-equiv="refresh"' not in body


def test_it_uploads_many_files_and_shows_their_progress(tenant: Tenant) -> None:
    response = _upload(
        tenant.client,
        SimpleUploadedFile("remote.md", REMOTE_WORK),
        SimpleUploadedFile("notes.txt", b"Parking is free for employees.\n"),
    )
    body = response.content.decode()
    assert response.redirect_chain == [("/library/", 303)]
    assert "remote.md uploaded as revision 1" in body and "notes.txt uploaded" in body
    assert File.objects.filter(organization=tenant.org).count() == 2
    # not picked up yet (no worker here): the stepper shows "pending" and the page refreshes
    assert 'aria-current="step">pending<' in body
    assert '<meta http-equiv="refresh" content="3">' in body
    assert "waiting for a worker" in body


def test_it_shows_each_stage_with_counts(tenant: Tenant, corpus: Path) -> None:
    pdf = corpus / "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf"
    record = factories.upload(tenant.source, pdf.name, pdf.read_bytes()).file
    body = tenant.client.get("/library/").content.decode()
    assert 'aria-current="step">pending<' in body
    ingestion.file_convert(file_id=str(record.pk))
    body = tenant.client.get("/library/").content.decode()
    assert 'aria-current="step">chunking<' in body and "3 of 3 pages converted" in body
    assert '<progress max="3" value="3"' in body
    ingestion.file_chunk(file_id=str(record.pk))
    body = tenant.client.get("/library/").content.decode()
    total = File.objects.get(pk=record.pk).progress_total
    assert 'aria-current="step">embedding<' in body and f"0 of {total} chunks embedded" in body
    ingestion.file_embed(file_id=str(record.pk))
    body = tenant.client.get("/library/").content.decode()
    assert "ready: " in body and 'http-equiv="refresh"' not in body


def test_a_row_read_in_progress_keeps_the_page_refreshing_after_its_file_is_ready(
    tenant: Tenant,
) -> None:
    """The rows are read first, the busy flag a moment later: a file that became ready
    in between was shown as embedding with the refresh stopped, and stayed so in the
    browser (seen under load). A row shown in progress asks for one more refresh."""
    record = factories.upload(tenant.source, "memo.md", b"# Memo\n\nShort.\n").file
    File.objects.filter(pk=record.pk).update(status="embedding")
    page = library_page(organization=tenant.org, number=1)
    assert [row.file.status for row in page.object_list] == ["embedding"]
    File.objects.filter(pk=record.pk).update(status="ready")  # published meanwhile
    assert library_busy(organization=tenant.org) is False
    assert library_busy(organization=tenant.org, shown=page) is True
    # the next read shows it ready, and the refresh stops
    page = library_page(organization=tenant.org, number=1)
    assert library_busy(organization=tenant.org, shown=page) is False
    assert 'data-busy="0"' in tenant.client.get("/library/").content.decode()


def test_a_pdf_being_converted_shows_its_pages_so_far(tenant: Tenant, corpus: Path) -> None:
    """What the worker saves while the sandbox converts (see test_pipeline)."""
    pdf = corpus / "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf"
    record = factories.upload(tenant.source, pdf.name, pdf.read_bytes()).file
    File.objects.filter(pk=record.pk).update(
        status="converting", progress_done=120, progress_total=900
    )
    body = tenant.client.get("/library/").content.decode()
    assert 'aria-current="step">converting<' in body and "120 of 900 pages converted" in body
    assert '<progress max="900" value="120"' in body
    File.objects.filter(pk=record.pk).update(progress_done=0, progress_total=0)
    body = tenant.client.get("/library/").content.decode()
    assert "converting to Markdown" in body and "<progress max" not in body


def test_it_says_why_an_unsupported_file_was_refused(tenant: Tenant) -> None:
    body = _upload(
        tenant.client,
        SimpleUploadedFile("tool.bin", b"MZ\x90\x00\x03\x00\x00\x00" + bytes(range(256)) * 4),
        SimpleUploadedFile("run.exe", b"# Looks like Markdown\n"),
        SimpleUploadedFile("ok.md", b"# Fine\n\nThis one is accepted.\n"),
    ).content.decode()
    assert "tool.bin was not uploaded: the file is neither UTF-8 text nor a supported" in body
    assert "run.exe was not uploaded: files named *.exe are not accepted" in body
    assert "ok.md uploaded as revision 1" in body
    assert list(File.objects.values_list("name", flat=True)) == ["ok.md"]


def test_it_says_why_an_oversized_file_was_refused(tenant: Tenant, settings: Settings) -> None:
    settings.PROVENANCE_MAX_UPLOAD_BYTES = 64
    body = _upload(tenant.client, SimpleUploadedFile("big.md", b"x" * 65)).content.decode()
    assert "big.md was not uploaded: the file is larger than the limit of 64 bytes" in body
    assert not File.objects.exists()


def test_it_refuses_an_upload_without_files_or_into_an_unknown_source(tenant: Tenant) -> None:
    assert "Choose at least one file" in _upload(tenant.client).content.decode()
    body = _upload(tenant.client, SimpleUploadedFile("a.md", b"# A\n"), source="Nope").content
    assert "Nothing was uploaded: unknown data source &#x27;Nope&#x27;" in body.decode()


def test_it_shows_a_failed_file_with_its_reason_and_retries_it_when_that_can_help(
    tenant: Tenant, corpus: Path
) -> None:
    """An encrypted PDF is refused for good by the current converter: no Retry, and a
    retry posted anyway is declined; once the converter it failed with is not the
    current one (a newer version may read it), Retry is offered and works."""
    pdf = corpus / "hostile/py-pdf/libreoffice-writer-password.pdf"
    record = factories.upload(tenant.source, pdf.name, pdf.read_bytes()).file
    ingestion.file_convert(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "failed" and "encrypted" in record.error_message
    assert record.refused_by == ingestion.converter_label("pdf")
    body = tenant.client.get("/library/").content.decode()
    assert f"Failed: {record.error_message}" in body.replace("&#x27;", "'")
    assert f'action="/library/files/{record.pk}/retry"' not in body
    assert "retrying cannot help: upload a corrected file" in body
    declined = tenant.client.post(f"/library/files/{record.pk}/retry", follow=True)
    assert "cannot help" in declined.content.decode()
    assert File.objects.get(pk=record.pk).status == "failed"

    File.objects.filter(pk=record.pk).update(refused_by="pdf-markdown 0.0.1")  # an older one
    body = tenant.client.get("/library/").content.decode()
    assert f'action="/library/files/{record.pk}/retry"' in body
    retried = tenant.client.post(f"/library/files/{record.pk}/retry", follow=True)
    assert "is queued again" in retried.content.decode()
    assert File.objects.get(pk=record.pk).status == "pending"
    assert File.objects.get(pk=record.pk).refused_by == ""
    again = tenant.client.post(f"/library/files/{record.pk}/retry", follow=True)
    assert "has not failed: nothing to retry" in again.content.decode()


def test_a_failure_that_may_pass_next_time_keeps_its_retry(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    from documents.converters.sandbox import FAULT_ENV

    monkeypatch.setenv(FAULT_ENV, "segv")  # the parser crashes: not the file's fault
    record = factories.upload(tenant.source, "data.json", b'{"a": 1}').file
    ingestion.file_convert(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "failed" and record.refused_by == ""
    assert "the parser crashed" in record.error_message
    body = tenant.client.get("/library/").content.decode()
    assert f'action="/library/files/{record.pk}/retry"' in body


def test_it_hides_other_organizations_files(tenant: Tenant) -> None:
    other = factories.organization("Globex")
    theirs = factories.upload(factories.data_source(other, "Secret"), "secret.md", b"# S\n").file
    body = tenant.client.get("/library/").content.decode()
    assert "secret.md" not in body
    assert tenant.client.post(f"/library/files/{theirs.pk}/retry").status_code == 404
    assert tenant.client.post("/library/files/not-a-uuid/retry").status_code == 404
    outsider = signed_in(member_of(other, "mallory"))
    assert "secret.md" in outsider.get("/library/").content.decode()


def test_every_form_needs_its_csrf_token(tenant: Tenant, remote_work: File) -> None:
    client = signed_in(tenant.user, enforce_csrf_checks=True)
    upload = SimpleUploadedFile("x.md", b"# X\n")
    form = {"data_source": "Handbook", "files": [upload]}
    assert client.post("/library/", form).status_code == 403
    assert client.post(f"/library/files/{remote_work.pk}/retry").status_code == 403
    assert client.post("/", {"app": str(tenant.app.pk), "question": "Hi?"}).status_code == 403
    assert client.post("/accounts/logout/").status_code == 403
    assert Client(enforce_csrf_checks=True).post("/accounts/login/", {}).status_code == 403
    # every page with a form carries the token
    for url in ("/library/", "/"):
        assert b'name="csrfmiddlewaretoken"' in client.get(url).content


def test_the_file_list_query_count_does_not_grow_with_files(
    tenant: Tenant, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    for i in range(3):
        factories.upload(tenant.source, f"doc{i}.md", f"# Doc {i}\n".encode())
    # 8: the rows shown are in progress, so the busy flag needs no query of its own
    with django_assert_num_queries(8) as few:
        tenant.client.get("/library/")
    baseline = len(few.captured_queries)
    for i in range(3, 12):
        factories.upload(tenant.source, f"doc{i}.md", f"# Doc {i}\n".encode())
    with django_assert_num_queries(baseline):
        tenant.client.get("/library/")
