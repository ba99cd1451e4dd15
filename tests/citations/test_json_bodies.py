"""Every operation of the API, enumerated from the OpenAPI schema (so a new route is
covered the day it is added), answers a hostile JSON body in the error shape:
nested too deep → 400 ``json_too_deep``, too large → 413 ``request_too_large``;
never a 500 (a body ~950 deep raised RecursionError before)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from citations.llm_apps import app_create
from citations.models import ResponseRecord
from core.api_keys import api_key_create, api_key_verify
from documents.json_limits import MAX_BODY_DEPTH
from tests import factories
from tests.support.openapi import generated_schema

pytestmark = pytest.mark.django_db

WRITES = ("post", "put", "patch", "delete")


def _deep(depth: int) -> bytes:
    return ('{"query": ' * depth + '"x"' + "}" * depth).encode()


@pytest.fixture
def ids() -> dict[str, str]:
    """A real id for every path parameter a JSON operation can name: views look the
    resource up before they read the body, so an unknown id would answer 404."""
    org = factories.organization("Json Bodies Inc")  # apart from the package's library
    source = factories.data_source(org, "Policies")
    record = factories.upload(source, "policy.md", b"# Policy\n\nBe kind.\n").file
    app = app_create(organization=org, name="Bodies", data_source_names=["Policies"])
    key = api_key_create(organization=org, role="admin")[1]  # every route: the widest role
    # revoking takes no body: a route that may act on it revokes this one, not the caller's
    key_row, _ = api_key_create(organization=org, role="viewer")
    thread = (
        _client(key)
        .post("/v1/threads", {"messages": [{"role": "user", "content": "Hi"}]}, format="json")
        .json()
    )
    message = _client(key).get(f"/v1/threads/{thread['id']}/messages").json()["data"][0]
    response = ResponseRecord.objects.create(
        organization=org, app=app, question="Hi", caller_api_key=api_key_verify(presented=key)
    )
    return {
        "key": key,
        "key_id": str(key_row.pk),
        "data_source_id": str(source.pk),
        "app_id": str(app.pk),
        "llm_app_id": str(app.pk),
        "file_id": str(record.pk),
        "thread_id": thread["id"],
        "message_id": message["id"],
        "response_id": str(response.pk),
    }


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _operations() -> list[tuple[str, str, bool]]:
    """(path, method, declares a JSON body) of every write operation."""
    operations = [
        (path, method, "application/json" in operation.get("requestBody", {}).get("content", {}))
        for path, item in generated_schema()["paths"].items()
        for method, operation in item.items()
        if method in WRITES
    ]
    assert any(json_body for _, _, json_body in operations), "no write operation takes JSON"
    return operations


def _url(path: str, ids: dict[str, str]) -> str:
    def fill(match: re.Match) -> str:
        # an id no declared body needs may be unknown (404 is an answer, too)
        return ids.get(match.group(1), str(uuid.uuid4()))

    return re.sub(r"\{(\w+)\}", fill, path)


def _send(client: APIClient, method: str, url: str, body: bytes) -> Any:
    # Django's client takes bytes too; the DRF stubs say str
    return client.generic(method.upper(), url, body, content_type="application/json")  # type: ignore[arg-type]


def test_the_schema_has_the_json_routes_this_test_covers() -> None:
    declared = {(path, method) for path, method, json_body in _operations() if json_body}
    assert {
        ("/semantics/apps/{llm_app_id}/query-executions", "post"),
        ("/v1/citations/validate", "post"),
        ("/v1/flow/files/{file_id}", "delete"),
        ("/v1/threads", "post"),
        ("/v1/threads/{thread_id}/messages", "post"),
        ("/v1/threads/{thread_id}/runs", "post"),
    } <= declared


def test_every_json_route_refuses_a_deep_body_with_400(ids: dict[str, str]) -> None:
    client = _client(ids["key"])
    for path, method, json_body in _operations():
        if json_body:
            names = set(re.findall(r"\{(\w+)\}", path))
            assert names <= ids.keys(), (
                f"{method} {path}: give the test a real {names - ids.keys()}"
            )
        for depth in (MAX_BODY_DEPTH + 1, 1000, 50_000):  # 50k: under 1 MiB
            response = _send(client, method, _url(path, ids), _deep(depth))
            assert response.status_code != 500, (method, path, depth)
            if json_body:
                assert response.status_code == 400, (method, path, depth)
                error = response.json()["error"]
                assert error["code"] == "json_too_deep", (method, path)
                assert error["type"] == "invalid_request_error"
                assert str(MAX_BODY_DEPTH) in error["message"]


def test_a_body_at_the_depth_limit_is_read(ids: dict[str, str]) -> None:
    """One level less than refused reaches the view, which judges the content."""
    response = _send(
        _client(ids["key"]), "post", f"/v1/threads/{ids['thread_id']}/messages", _deep(63)
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] != "json_too_deep"


@override_settings(PROVENANCE_MAX_JSON_BODY_BYTES=4096)
def test_every_json_route_refuses_a_body_past_the_size_limit_with_413(ids: dict[str, str]) -> None:
    client = _client(ids["key"])
    large = b'{"query": "' + b"x" * 5000 + b'"}'
    for path, method, json_body in _operations():
        if not json_body:
            continue
        response = _send(client, method, _url(path, ids), large)
        assert response.status_code == 413, (method, path)
        assert response.json()["error"]["code"] == "request_too_large"
    small = _send(client, "post", "/v1/threads", b'{"metadata": {"a": "' + b"x" * 50 + b'"}}')
    assert small.status_code == 200


def test_a_body_past_the_default_limit_is_refused_before_its_depth_is_read(
    ids: dict[str, str],
) -> None:
    response = _send(
        _client(ids["key"]), "post", "/v1/citations/validate", b"[" * (2 * 1024 * 1024)
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
