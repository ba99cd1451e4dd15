"""POST /v1/flow/files, GET /v1/flow/files/{id}, GET …/content: happy path and bad input."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.conf import settings
from django.http import FileResponse
from django.test import override_settings
from rest_framework.test import APIClient

from documents.models import File, Organization
from tests import factories
from tests.support.http import streamed

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


pytestmark = pytest.mark.django_db


def _client(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _stored_files() -> set[Path]:
    root = Path(settings.MEDIA_ROOT)
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


@pytest.fixture
def tenant() -> tuple[Organization, str]:
    org = factories.organization("Acme")
    factories.data_source(org, "Human Resources")
    return org, factories.api_key(org)


def _post(
    client: APIClient, name: str, data: bytes, source: str = "Human Resources"
) -> _MonkeyPatchedResponse:
    """A hand-built multipart body: Django's test client would strip path parts itself."""
    boundary = "----provenance-test-boundary"
    escaped = name.replace('"', "%22")
    body = (
        (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="data_source"\r\n\r\n{source}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{escaped}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode("utf-8", "surrogateescape")
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    # Django's client takes bytes too; the DRF stubs say str
    return client.generic(
        "POST",
        "/v1/flow/files",
        body,  # type: ignore[arg-type]
        content_type=f"multipart/form-data; boundary={boundary}",
    )


def test_it_accepts_a_markdown_upload_and_streams_back_identical_bytes(
    tenant: tuple[Organization, str], corpus: Path
) -> None:
    _, key = tenant
    data = (corpus / "docling/md/duck.md").read_bytes()
    response = _post(_client(key), "duck.md", data)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["status"] == "pending" and body["revision"] == 1 and body["kind"] == "markdown"
    # absolute, like every other URL of the API
    status_url = f"http://testserver/v1/flow/files/{body['file_id']}"
    assert response["Location"] == body["status_url"] == status_url
    assert body["content_url"] == f"{status_url}/content"

    detail = _client(key).get(body["status_url"]).json()
    assert detail["file_id"] == body["file_id"] and detail["size"] == len(data)
    assert detail["progress"] == {"done": 0, "total": 0}

    content = _client(key).get(f"/v1/flow/files/{body['file_id']}/content")
    assert content.status_code == 200 and isinstance(content, FileResponse)
    downloaded = streamed(content)
    assert hashlib.sha256(downloaded).hexdigest() == body["sha256"]
    assert content["Content-Type"].startswith("text/markdown")
    assert 'attachment; filename="duck.md"' in content["Content-Disposition"]


@pytest.mark.parametrize(
    ("name", "fallback"),
    [
        ("Überblick Geschäftsbericht.md", "Uberblick Geschaftsbericht.md"),
        ("日本語.md", "download.md"),
        ("a;b 100%.md", "a_b 100_.md"),
    ],
)
def test_a_download_names_the_file_exactly_with_an_ascii_stand_in_first(
    tenant: tuple[Organization, str], name: str, fallback: str
) -> None:
    """RFC 6266: ``filename`` for clients that read only it, ``filename*`` for the
    exact name (Django sent only the latter for a non-ASCII name)."""
    from django.utils.http import parse_header_parameters

    _, key = tenant
    data = b"# Report\n\nFigures.\n"
    file_id = _post(_client(key), name, data).json()["file_id"]
    content = _client(key).get(f"/v1/flow/files/{file_id}/content")
    header = content["Content-Disposition"]
    assert header.startswith(f"attachment; filename=\"{fallback}\"; filename*=UTF-8''")
    kind, parameters = parse_header_parameters(header)
    assert (kind, parameters["filename"]) == ("attachment", name)  # filename* wins
    assert isinstance(content, FileResponse)
    assert header.isascii() and streamed(content) == data


def test_it_stores_originals_under_server_generated_names(
    tenant: tuple[Organization, str], corpus: Path
) -> None:
    _, key = tenant
    body = _post(
        _client(key),
        "report.pdf",
        (corpus / "py-pdf-sample-files/001-trivial/minimal-document.pdf").read_bytes(),
    ).json()
    record = File.objects.get(pk=body["file_id"])
    assert "report" not in record.storage_key and record.storage_key.endswith(".pdf")
    assert record.kind == "pdf" and record.content_type == "application/pdf"


def test_same_name_makes_a_new_revision_and_identical_bytes_are_detected(
    tenant: tuple[Organization, str],
) -> None:
    _, key = tenant
    first = _post(_client(key), "policy.md", b"# Policy\n\nv1\n").json()
    again = _post(_client(key), "policy.md", b"# Policy\n\nv1\n")
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["file_id"] == first["file_id"]
    second = _post(_client(key), "policy.md", b"# Policy\n\nv2\n").json()
    assert second["revision"] == 2 and second["file_id"] != first["file_id"]
    assert File.objects.filter(name="policy.md").count() == 2


@pytest.mark.parametrize(
    ("name", "data", "status", "code"),
    [
        ("empty.md", b"", 400, "empty_file"),
        ("random.bin", None, 415, "unsupported_file_type"),
        ("archive.pdf", b"PK\x03\x04", 415, "unsupported_file_type"),
        ("../../etc/passwd.md", b"# hi\n", 400, "invalid_filename"),
        ("evil\x00.md", b"# hi\n", 400, "invalid_filename"),
        ("..\\windows.md", b"# hi\n", 400, "invalid_filename"),
    ],
)
def test_bad_uploads_get_a_clear_error_and_leave_nothing(
    tenant: tuple[Organization, str],
    corpus: Path,
    name: str,
    data: bytes | None,
    status: int,
    *,
    code: str,
) -> None:
    _, key = tenant
    if data is None:
        data = (corpus / "hostile/markitdown/random.bin").read_bytes()
    before = _stored_files()
    response = _post(_client(key), name, data)
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert File.objects.count() == 0
    assert _stored_files() == before


def test_a_zip_renamed_pdf_is_refused_by_content(
    tenant: tuple[Organization, str], tmp_path: Path
) -> None:
    import zipfile

    _, key = tenant
    path = tmp_path / "book.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", "<container/>")
    response = _post(_client(key), "book.pdf", path.read_bytes())
    assert response.status_code == 415
    assert "EPUB" in response.json()["error"]["message"]


def test_oversized_upload_is_refused(tenant: tuple[Organization, str]) -> None:
    _, key = tenant
    with override_settings(PROVENANCE_MAX_UPLOAD_BYTES=1000):
        response = _post(_client(key), "big.md", b"# x\n" + b"a" * 2000)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"
    assert File.objects.count() == 0


def test_unknown_data_source_is_a_400_naming_the_parameter(
    tenant: tuple[Organization, str],
) -> None:
    _, key = tenant
    response = _post(_client(key), "a.md", b"# a\n", source="Nope")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "unknown data source 'Nope': create it first "
        "(POST /v1/flow/data-sources with its name, an editor's or admin's key)",
        "type": "invalid_request_error",
        "param": "data_source",
        "code": "unknown_data_source",
    }


def test_missing_file_field_is_a_400(tenant: tuple[Organization, str]) -> None:
    _, key = tenant
    response = _client(key).post(
        "/v1/flow/files", {"data_source": "Human Resources"}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "file"


def test_wrong_or_missing_key_is_401(tenant: tuple[Organization, str]) -> None:
    assert _post(_client(None), "a.md", b"# a\n").status_code == 401
    assert _post(_client("pvk_nothere_secret"), "a.md", b"# a\n").status_code == 401
    response = APIClient().get("/v1/flow/files/x", HTTP_AUTHORIZATION="Basic abc")
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_organization_header_must_match_the_key(tenant: tuple[Organization, str]) -> None:
    org, key = tenant
    client = _client(key)
    assert (
        client.get(
            "/v1/flow/files/00000000-0000-0000-0000-000000000000",
            HTTP_X_WIKIT_ORGANIZATION_ID=str(org.pk),
        ).status_code
        == 404
    )
    assert (
        client.get(
            "/v1/flow/files/00000000-0000-0000-0000-000000000000",
            HTTP_X_WIKIT_ORGANIZATION_ID="someone-else",
        ).status_code
        == 401
    )


def test_another_tenant_cannot_see_or_download_a_file(tenant: tuple[Organization, str]) -> None:
    _, key = tenant
    body = _post(_client(key), "secret.md", b"# Secret\n\nsalary table\n").json()
    other = factories.organization("Globex")
    other_key = factories.api_key(other)
    for suffix in ("", "/content", "/markdown"):
        response = _client(other_key).get(f"/v1/flow/files/{body['file_id']}{suffix}")
        assert response.status_code == 404, suffix
    assert _client(other_key).get("/v1/flow/files/not-a-uuid").status_code == 404


def test_api_keys_are_stored_hashed(tenant: tuple[Organization, str]) -> None:
    from documents.models import ApiKey

    _, key = tenant
    row = ApiKey.objects.get()
    assert key not in (row.key_hash, row.prefix)
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()


def test_last_used_at_is_recorded_without_a_write_per_request(
    tenant: tuple[Organization, str],
) -> None:
    """Set on first use, then refreshed at most once per LAST_USED_RESOLUTION, so reads
    are not turned into writes."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.api_keys import LAST_USED_RESOLUTION
    from documents.models import ApiKey

    _, key = tenant
    assert ApiKey.objects.get().last_used_at is None
    assert _client(key).get("/v1/flow/files/not-a-uuid").status_code == 404
    first = ApiKey.objects.get().last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        assert _client(key).get("/v1/flow/files/not-a-uuid").status_code == 404
    assert not [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert ApiKey.objects.get().last_used_at == first

    ApiKey.objects.update(last_used_at=first - LAST_USED_RESOLUTION)
    assert _client(key).get("/v1/flow/files/not-a-uuid").status_code == 404
    last_used = ApiKey.objects.get().last_used_at
    assert last_used is not None and last_used > first


def _delete(client: APIClient, file_id: object, body: object) -> _MonkeyPatchedResponse:
    return client.delete(f"/v1/flow/files/{file_id}", body, format="json")


def test_deleting_a_file_needs_a_reason_records_once_and_answers_409_after(
    tenant: tuple[Organization, str],
) -> None:
    from audit.models import DocumentEvent

    org, key = tenant
    record = factories.upload(org.data_sources.get(), "leave.md", b"# Leave\n\nTwenty days.\n").file
    client = _client(key)
    for body, code in (
        ({}, "reason_required"),
        ({"reason": "   "}, "reason_required"),
        ({"reason": 42}, "reason_required"),
        ({"reason": ["policy withdrawn"]}, "reason_required"),
        ({"reason": None}, "reason_required"),
        (["policy withdrawn"], "reason_required"),
        ({"reason": "x" * 2001}, "reason_too_long"),
    ):
        response = _delete(client, record.pk, body)
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == code, body
    assert not DocumentEvent.objects.filter(kind="deletion").exists()

    deleted = _delete(client, record.pk, {"reason": "  policy withdrawn\n"})
    assert deleted.status_code == 200 and deleted.json()["deleted_at"]
    assert DocumentEvent.objects.get(kind="deletion", file=record).reason == "policy withdrawn"
    again = _delete(client, record.pk, {"reason": "policy withdrawn"})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_deleted"
    assert DocumentEvent.objects.filter(kind="deletion", file=record).count() == 1

    # the same bytes uploaded again bring the document back as a new revision
    back = _post(client, "leave.md", b"# Leave\n\nTwenty days.\n")
    assert back.status_code == 202 and back.json()["duplicate"] is False
    assert back.json()["revision"] == 2 and back.json()["deleted_at"] is None


def test_a_deletion_reason_may_come_in_the_query_string_and_the_body_wins(
    tenant: tuple[Organization, str],
) -> None:
    """Some HTTP clients send no body with DELETE: ``?reason=`` is their way."""
    from audit.models import DocumentEvent

    org, key = tenant
    source = org.data_sources.get()
    first = factories.upload(source, "leave.md", b"# Leave\n\nTwenty days.\n").file
    second = factories.upload(source, "travel.md", b"# Travel\n\nBy train.\n").file
    client = _client(key)
    for query, code in (
        ("?reason=", "reason_required"),
        ("?reason=" + "x" * 2001, "reason_too_long"),
    ):
        response = client.delete(f"/v1/flow/files/{first.pk}{query}")
        assert response.status_code == 400 and response.json()["error"]["code"] == code
        assert response.json()["error"]["param"] == "reason"

    deleted = client.delete(f"/v1/flow/files/{first.pk}?reason=superseded%20by%20v2")
    assert deleted.status_code == 200 and deleted.json()["deletion_reason"] == "superseded by v2"
    both = _delete(client, f"{second.pk}?reason=from%20the%20query", {"reason": "from the body"})
    assert both.status_code == 200
    recorded = DocumentEvent.objects.filter(kind="deletion").order_by("id")
    assert [e.reason for e in recorded] == ["superseded by v2", "from the body"]
    first.refresh_from_db()
    assert first.deletion_reason == "superseded by v2"


def test_another_tenants_file_cannot_be_deleted(tenant: tuple[Organization, str]) -> None:
    org, _ = tenant
    record = factories.upload(org.data_sources.get(), "leave.md", b"# Leave\n\nTwenty days.\n").file
    other = factories.organization("Globex")
    for client in (_client(factories.api_key(other)), _client(None), _client("pk_bogus")):
        response = _delete(client, record.pk, {"reason": "not mine"})
        assert response.status_code in (401, 404)
    assert _delete(_client(factories.api_key(other)), record.pk, {"reason": "x"}).status_code == 404
    record.refresh_from_db()
    assert record.deleted_at is None
