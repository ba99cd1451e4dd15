"""The OpenAPI schema integrators generate clients from: complete (every
operation says what it returns and how to authenticate) and true (real
responses of every endpoint validate against it, unknown fields included)."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from documents.models import Chunk, File
from tests import factories
from tests.citations.conftest import Library
from tests.support.openapi import assert_documented, generated_schema

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


pytestmark = pytest.mark.django_db

QUESTION = "Within what time must security incidents be reported?"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return generated_schema()


def _check(schema: dict, response: _MonkeyPatchedResponse, path: str, method: str) -> None:
    assert_documented(schema, response.status_code, response.json(), path, method)


def test_the_schema_is_valid_and_generated_without_warnings() -> None:
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert out.getvalue().startswith("openapi: 3.0")


def test_every_operation_documents_its_response_and_how_to_authenticate(
    schema: dict[str, Any],
) -> None:
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    headers = {s.get("name") for s in schemes.values() if s["type"] == "apiKey"}
    assert {"X-API-Key", "Wikit-Semantics-API-Key"} <= headers
    operations = [
        (path, method, operation)
        for path, item in schema["paths"].items()
        if path.startswith(("/v1/", "/semantics/"))
        for method, operation in item.items()
    ]
    assert len(operations) >= 20
    for path, method, operation in operations:
        success = [c for c in operation["responses"] if c.startswith("2")]
        assert success, f"{method} {path}"
        for code in success:
            assert operation["responses"][code].get("content"), f"{method} {path} {code}"
        # any one key header is enough: alternatives, never all of them at once
        assert {"bearerAuth": []} in operation["security"], f"{method} {path}"
        assert all(len(requirement) <= 1 for requirement in operation["security"])


def _is_free_object(node: dict) -> bool:
    return node.get("type") == "object" and not node.get("properties") and "$ref" not in node


def test_every_json_body_is_described_field_by_field(schema: dict[str, Any]) -> None:
    """No operation answers or accepts a bare ``object``: a generated client would
    know nothing of its fields (the threads endpoints did, before)."""
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            bodies = [
                response["content"]["application/json"]["schema"]
                for code, response in operation["responses"].items()
                if "application/json" in response.get("content", {})
            ]
            request = operation.get("requestBody", {}).get("content", {})
            bodies += [media["schema"] for media in request.values()]
            for body in bodies:
                assert not _is_free_object(body), f"{method.upper()} {path}"
    thread_operations = [path for path in schema["paths"] if path.startswith("/v1/threads")]
    assert len(thread_operations) == 9  # with a run's steps and one step
    runs = schema["paths"]["/v1/threads/{thread_id}/runs"]
    assert runs["post"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RunObject"
    }
    assert "assistant_id" in schema["components"]["schemas"]["RunCreateInput"]["required"]


def test_a_file_deletion_documents_the_reason_it_needs(schema: dict[str, Any]) -> None:
    """drf-spectacular leaves every DELETE body out; a generated client would then
    have no way to send the reason the endpoint requires."""
    delete = schema["paths"]["/v1/flow/files/{file_id}"]["delete"]
    body = delete["requestBody"]
    assert body["required"] is True
    assert body["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/FileDeleteInput"
    }
    described = schema["components"]["schemas"]["FileDeleteInput"]
    assert described["required"] == ["reason"]
    assert described["properties"]["reason"] | {"description": ""} == {
        "type": "string",
        "minLength": 1,
        "maxLength": 2000,
        "description": "",
    }
    # a DELETE that declares no body gets none; one whose body is optional says so
    assert "requestBody" not in schema["paths"]["/v1/flow/apps/{app_id}"]["delete"]
    optional = schema["paths"]["/v1/threads/{thread_id}"]["delete"]["requestBody"]
    assert optional.get("required", False) is False


def test_real_responses_validate_against_the_schema(
    schema: dict[str, Any], library: Library
) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    app = library.handbook.pk
    created = client.post(
        f"/semantics/apps/{app}/query-executions", {"query": QUESTION}, format="json"
    )
    assert created.status_code == 201
    _check(schema, created, "/semantics/apps/{llm_app_id}/query-executions", "post")
    query_id = created.json()["query_id"]
    base = f"/semantics/apps/{app}"
    for path, method, url in (
        (
            "/semantics/apps/{llm_app_id}/query-executions/{query_id}",
            "get",
            f"{base}/query-executions/{query_id}",
        ),
        (
            "/semantics/apps/{llm_app_id}/query-execution-sources/{query_id}/get-quoted-sources",
            "get",
            f"{base}/query-execution-sources/{query_id}/get-quoted-sources",
        ),
        (
            "/semantics/apps/{llm_app_id}/query-executions/{query_execution_id}/citations",
            "post",
            f"{base}/query-executions/{query_id}/citations",
        ),
        (
            "/semantics/apps/{llm_app_id}/query-executions/{query_id}/validation",
            "get",
            f"{base}/query-executions/{query_id}/validation",
        ),
    ):
        response = getattr(client, method)(url)
        assert response.status_code == 200, url
        assert response.json(), url
        _check(schema, response, path, method)

    hits = client.get(f"{base}/query-executions/{query_id}").json()["hits"]
    validated = client.post(
        "/v1/citations/validate", {"citations": [hits[0]["citation"]]}, format="json"
    )
    assert validated.status_code == 200 and validated.json()["result"] == "ok"
    _check(schema, validated, "/v1/citations/validate", "post")

    chunk = Chunk.objects.filter(organization=library.organization, is_retrievable=True).first()
    assert chunk is not None
    record = File.objects.get(pk=chunk.file_id)
    for path, url in (
        ("/v1/flow/files/{file_id}", f"/v1/flow/files/{record.pk}"),
        ("/v1/flow/files/{file_id}/markdown", f"/v1/flow/files/{record.pk}/markdown"),
        (
            "/v1/flow/vectordb/{database_id}/chunk/{chunk_id}",
            f"/v1/flow/vectordb/{chunk.vector_database_id}/chunk/{chunk.pk}",
        ),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        _check(schema, response, path, "get")


def test_error_responses_validate_against_the_schema(
    schema: dict[str, Any], library: Library
) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    app = library.handbook.pk
    unknown = "00000000-0000-0000-0000-000000000000"
    path = "/semantics/apps/{llm_app_id}/query-executions"
    bad = client.post(f"/semantics/apps/{app}/query-executions", {"q": 1}, format="json")
    assert bad.status_code == 400
    _check(schema, bad, path, "post")
    for body, content_type in (
        ("query=leave", "application/x-www-form-urlencoded"),
        ("leave", "text/plain"),
    ):
        unsupported = client.post(
            f"/semantics/apps/{app}/query-executions", body, content_type=content_type
        )
        assert unsupported.status_code == 415
        assert unsupported.json()["error"]["code"] == "unsupported_media_type"
        _check(schema, unsupported, path, "post")
    missing = client.get(f"/v1/flow/files/{unknown}")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    _check(schema, missing, "/v1/flow/files/{file_id}", "get")
    anonymous = APIClient()
    anonymous.credentials(HTTP_AUTHORIZATION="Bearer pk_not_a_key")
    refused = anonymous.get(f"/v1/flow/files/{unknown}")
    assert refused.status_code == 401
    _check(schema, refused, "/v1/flow/files/{file_id}", "get")
    assert re.fullmatch(r"[a-z_]+", refused.json()["error"]["code"])


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def _resolve(schema: dict, ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = schema
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"dangling $ref {ref}"
        node = node[part]
    return node


def test_every_ref_resolves(schema: dict[str, Any]) -> None:
    """``TextPartInput`` was named inside a raw field schema and never generated."""
    refs = set(_refs(schema))
    assert "#/components/schemas/MessageContentInput" in refs
    for ref in refs:
        _resolve(schema, ref)
    content = schema["components"]["schemas"]["MessageContentInput"]["oneOf"][1]["items"]
    assert content["properties"]["type"]["enum"] == ["text"]


def test_every_limit_parameter_is_bounded(schema: dict[str, Any]) -> None:
    limits = [
        (path, parameter["schema"])
        for path, item in schema["paths"].items()
        for operation in item.values()
        for parameter in operation.get("parameters", [])
        if parameter["name"] == "limit"
    ]
    assert len(limits) >= 2
    for path, described in limits:
        assert described["type"] == "integer", path
        assert described["minimum"] == 1 and described["maximum"] == 100, path


def test_json_operations_advertise_json_only_and_the_upload_a_binary_file(
    schema: dict[str, Any],
) -> None:
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            media = set(operation.get("requestBody", {}).get("content", {}))
            if path == "/v1/flow/files" and method == "post":
                assert media == {"multipart/form-data"}
            else:
                assert media <= {"application/json"}, f"{method} {path}: {media}"
    assert set(schema["paths"]["/v1/citations/validate"]["post"]["requestBody"]["content"]) == {
        "application/json"
    }
    upload = schema["components"]["schemas"]["FileUploadInput"]["properties"]["file"]
    assert upload == {"type": "string", "format": "binary"}


def test_the_validator_refuses_a_multipart_body_it_no_longer_advertises() -> None:
    client = APIClient()
    key = factories.api_key(factories.organization("Acme"))
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.post("/v1/citations/validate", {"citations": "[]"}, format="multipart")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
