"""Text PostgreSQL cannot store (a NUL character, an unpaired UTF-16 surrogate) is
refused with a 400 that names the field, by every endpoint and form, and nothing
is written: before, each of these answered a 500 (a DataError, or an encoding
error psycopg raised) after part of the work was done."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from audit.models import DocumentEvent
from citations.models import QueryExecution, Thread
from tests import factories
from tests.web.conftest import Tenant

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


pytestmark = pytest.mark.django_db

NUL, SURROGATE = "\\u0000", "\\ud800"  # as JSON spells them


def _api(tenant: Tenant) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.api_key(tenant.org)}")
    return client


def _send(client: APIClient, method: str, url: str, body: str) -> _MonkeyPatchedResponse:
    return getattr(client, method)(url, data=body, content_type="application/json")


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
def test_every_json_endpoint_refuses_unstorable_text_and_writes_nothing(
    tenant: Tenant, bad: str
) -> None:
    client = _api(tenant)
    thread = client.post("/v1/threads", {}, format="json").json()["id"]
    record = factories.upload(tenant.source, "leave.md", b"# Leave\n\nTwenty days.\n").file
    app = tenant.app.pk
    cases = [
        (
            "post",
            f"/semantics/apps/{app}/query-executions",
            f'{{"query": "invoices{bad}kept"}}',
            "query",
        ),
        ("post", "/v1/threads", f'{{"metadata": {{"k": "a{bad}"}}}}', "metadata.k"),
        (
            "post",
            "/v1/threads",
            f'{{"messages": [{{"role": "user", "content": "x{bad}"}}]}}',
            "messages[0].content",
        ),
        (
            "post",
            f"/v1/threads/{thread}/messages",
            f'{{"role": "user", "content": "a{bad}b"}}',
            "content",
        ),
        (
            "post",
            f"/v1/threads/{thread}/runs",
            f'{{"assistant_id": "{app}", "instructions": "a{bad}"}}',
            "instructions",
        ),
        ("delete", f"/v1/flow/files/{record.pk}", f'{{"reason": "withdrawn{bad}"}}', "reason"),
        (
            "post",
            "/v1/citations/validate",
            f'{{"citations": [{{"doc_id": "{bad}"}}]}}',
            "citations[0].doc_id",
        ),
        (
            "post",
            f"/semantics/apps/{app}/query-executions",
            f'{{"q{bad}": 1, "query": "x"}}',
            f"q{bad}",
        ),
    ]
    threads_before = Thread.objects.count()
    for method, url, body, param in cases:
        response = _send(client, method, url, body)
        assert response.status_code == 400, (url, body, response.content[:300])
        error = response.json()["error"]
        assert error["code"] == "unstorable_text", (url, error)
        assert error["type"] == "invalid_request_error"
        assert error["param"] == param, (url, error)  # a key's character escaped as in JSON
        kind = "NUL character" if bad == NUL else "unpaired UTF-16 surrogate"
        assert kind in error["message"], error
    assert Thread.objects.count() == threads_before
    assert not QueryExecution.objects.exists()
    assert not DocumentEvent.objects.filter(kind="deletion").exists()
    record.refresh_from_db()
    assert record.deleted_at is None
    # the same endpoints still answer ordinary text
    asked = _send(client, "post", f"/semantics/apps/{app}/query-executions", '{"query": "leave"}')
    assert asked.status_code == 201, asked.content[:300]


def test_the_ask_form_the_library_form_and_the_command_refuse_a_nul(tenant: Tenant) -> None:
    response = tenant.client.post("/", {"app": str(tenant.app.pk), "question": "abc\x00def"})
    assert response.status_code == 400
    assert "The question holds a NUL character" in response.content.decode()
    assert not QueryExecution.objects.exists()

    upload = SimpleUploadedFile("leave.md", b"# Leave\n\nTwenty days.\n")
    page = tenant.client.post(
        "/library/", {"data_source": "Hand\x00book", "files": [upload]}, follow=True
    )
    assert page.status_code == 200
    assert "Nothing was uploaded: unknown data source" in page.content.decode()
    assert not tenant.source.files.exists()

    with pytest.raises(CommandError, match="NUL character"):
        call_command("ask", "abc\x00def", "--app", tenant.app.name)
    assert not QueryExecution.objects.exists()
