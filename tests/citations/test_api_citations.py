"""The source-citation REST endpoints, field by field, and their bad inputs."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from rest_framework.test import APIClient

from tests import factories
from tests.citations.conftest import Library

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


pytestmark = pytest.mark.django_db

QUESTION = "Within what time must security incidents be reported?"


def _client(key: str | None = None, **headers: str) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}", **headers)
    elif headers:
        client.credentials(**headers)
    return client


def _ask(client: APIClient, app_id: object, question: str = QUESTION) -> _MonkeyPatchedResponse:
    return client.post(
        f"/semantics/apps/{app_id}/query-executions", {"query": question}, format="json"
    )


def test_query_then_quoted_sources_have_the_documented_shape(library: Library) -> None:
    client = _client(library.key)
    created = _ask(client, library.handbook.pk)
    assert created.status_code == 201, created.content
    body = created.json()
    assert {"query_id", "answer"} <= set(body)
    assert "within one hour" in body["answer"]
    sources = client.get(body["quoted_sources_url"]).json()
    assert [s["quoted_as"] for s in sources] == sorted(
        set(re.findall(r"\[(\d+)\]", body["answer"])), key=int
    )
    first = sources[0]
    assert set(first) >= {
        "quoted_as",
        "document",
        "chunk",
        "data_source",
        "score",
        "retriever_type",
    }
    assert set(first["document"]) == {
        "id",
        "name",
        "title",
        "url",
        "public_link",
        "storage_name",
        "data_source_id",
        "organization_id",
    }
    assert set(first["chunk"]) == {
        "id",
        "data",
        "document_id",
        "data_source_id",
        "llm_app_id",
        "user_id",
        "flags",
        "position",
        "page_start",
        "page_end",
    }
    assert set(first["data_source"]) == {"id", "name"}
    assert isinstance(first["quoted_as"], str) and 0 <= first["score"] <= 1
    assert first["document"]["name"] == "security-policy.pdf"
    assert first["document"]["organization_id"] == str(library.organization.pk)
    assert first["data_source"]["name"] == "Handbook"
    assert (
        first["chunk"]["page_start"] == 3
        and first["chunk"]["document_id"] == first["document"]["id"]
    )
    assert first["retriever_type"] in {"SEMANTIC_SEARCH", "FULL_TEXT_SEARCH", "HYBRID_SEARCH"}
    # the chain continues: chunk provenance, then the original bytes
    chunk = client.get(first["provenance"]["chunk_url"]).json()
    assert chunk["chunk_text"] == first["chunk"]["data"]
    download = client.get(first["document"]["url"])
    assert download.status_code == 200


def test_sentence_citations_v1_spans_are_exact(library: Library) -> None:
    client = _client(library.key)
    body = _ask(client, library.handbook.pk).json()
    citations = client.post(
        f"/semantics/apps/{library.handbook.pk}/query-executions/{body['query_id']}/citations",
        {},
        format="json",
    ).json()
    assert citations and all(c["total_count"] == len(citations) for c in citations)
    sources = {s["chunk"]["id"]: s for s in client.get(body["quoted_sources_url"]).json()}
    for item in citations:
        assert (
            body["answer"][item["start_char_idx"] : item["end_char_idx"]] == item["reply_sentence"]
        )
        chunk_text = sources[item["chunk_id"]]["chunk"]["data"]
        start, end = item["source_start_char_idx"], item["source_end_char_idx"]
        assert chunk_text[start:end] == item["source_sentence"]
        assert item["query_execution_id"] == body["query_id"]
        assert item["document_name"] and item["organization_id"] == str(library.organization.pk)
        # v1 documents its pages as 0-indexed
        assert item["chunk_page_start"] == sources[item["chunk_id"]]["chunk"]["page_start"] - 1


def test_the_documented_key_and_organization_headers_are_accepted(library: Library) -> None:
    client = _client(
        HTTP_WIKIT_SEMANTICS_API_KEY=library.key,
        HTTP_X_WIKIT_ORGANIZATION_ID=str(library.organization.pk),
    )
    assert _ask(client, library.handbook.pk).status_code == 201
    wrong_org = _client(
        HTTP_WIKIT_SEMANTICS_API_KEY=library.key,
        HTTP_X_WIKIT_ORGANIZATION_ID="00000000-0000-0000-0000-000000000000",
    )
    assert _ask(wrong_org, library.handbook.pk).status_code == 401


def test_public_apps_answer_without_a_key_private_ones_do_not(library: Library) -> None:
    anonymous = _client()
    public = _ask(anonymous, library.public.pk)
    assert public.status_code == 201
    sources = anonymous.get(public.json()["quoted_sources_url"])
    assert sources.status_code == 200 and sources.json()
    private = _ask(anonymous, library.handbook.pk)
    assert private.status_code == 401
    assert private.json()["error"]["type"] == "authentication_error"


def test_bad_keys_unknown_apps_and_other_tenants(library: Library) -> None:
    assert _ask(_client("pvk_000000000000_nope"), library.public.pk).status_code == 401
    assert _ask(_client(library.key), "00000000-0000-0000-0000-000000000000").status_code == 404
    assert _ask(_client(library.key), "not-a-uuid").status_code == 404
    other = factories.organization("Globex")
    other_key = factories.api_key(other)
    assert _ask(_client(other_key), library.handbook.pk).status_code == 404
    body = _ask(_client(library.key), library.handbook.pk).json()
    for path in (
        f"/semantics/apps/{library.handbook.pk}/query-execution-sources/{body['query_id']}/get-quoted-sources",
        f"/semantics/apps/{library.handbook.pk}/query-executions/{body['query_id']}",
    ):
        assert _client(other_key).get(path).status_code == 404
    # a query id through another app of the same organization is not found either
    assert (
        _client(library.key)
        .get(
            f"/semantics/apps/{library.squad.pk}/query-execution-sources/{body['query_id']}"
            "/get-quoted-sources"
        )
        .status_code
        == 404
    )
    assert (
        _client(library.key)
        .get(
            f"/semantics/apps/{library.handbook.pk}/query-execution-sources/"
            "00000000-0000-0000-0000-000000000000/get-quoted-sources"
        )
        .status_code
        == 404
    )


@pytest.mark.parametrize(
    ("payload", "content_type", "code"),
    [
        ('{"query": ""}', "application/json", "empty_query"),
        ('{"query": 12}', "application/json", "invalid_query"),
        ('{"question": "hi"}', "application/json", "invalid_query"),
        ('["query"]', "application/json", "invalid_query"),
        ('{"query": "unterminated', "application/json", "parse_error"),
        ("query=hello", "text/plain", "unsupported_media_type"),
    ],
)
def test_malformed_bodies_get_clear_400s(
    library: Library, payload: str, content_type: str, code: str
) -> None:
    response = _client(library.key).generic(
        "POST",
        f"/semantics/apps/{library.handbook.pk}/query-executions",
        payload,
        content_type=content_type,
    )
    assert response.status_code in {400, 415}, response.content
    error = response.json()["error"]
    assert error["code"] == code and error["message"]


def test_a_huge_question_is_refused(library: Library) -> None:
    response = _ask(_client(library.key), library.handbook.pk, "why " * 1000)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "query_too_long"


def test_query_detail_lists_every_hit_with_its_payload(library: Library) -> None:
    client = _client(library.key)
    body = _ask(client, library.handbook.pk).json()
    detail = client.get(
        f"/semantics/apps/{library.handbook.pk}/query-executions/{body['query_id']}"
    )
    hits = detail.json()["hits"]
    assert [h["k_pos"] for h in hits] == list(range(1, len(hits) + 1))
    assert all(h["citation"]["index_hash"] == body["index_hash"] for h in hits)
    validation = client.get(
        f"/semantics/apps/{library.handbook.pk}/query-executions/{body['query_id']}/validation"
    )
    assert validation.json()["result"] == "ok"


def test_openapi_schema_lists_every_endpoint(library: Library) -> None:
    schema = _client().get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = set(schema.json()["paths"])
    for path in (
        "/v1/flow/files",
        "/v1/flow/files/{file_id}",
        "/v1/flow/files/{file_id}/content",
        "/v1/flow/files/{file_id}/markdown",
        "/v1/flow/vectordb/{database_id}/chunk/{chunk_id}",
        "/semantics/apps/{llm_app_id}/query-executions",
        "/semantics/apps/{llm_app_id}/query-execution-sources/{query_id}/get-quoted-sources",
        "/semantics/apps/{llm_app_id}/query-executions/{query_execution_id}/citations",
        "/v1/citations/validate",
    ):
        assert path in paths, path


def test_each_quoted_sentence_names_its_own_section_page_and_line(library: Library) -> None:
    """The chunk holding "seven years" starts in the section before "Records
    Retention": the quote is placed under its own heading, at its own line."""
    client = _client(library.key)
    body = _ask(client, library.handbook.pk, "How long are invoices kept?").json()
    [source] = [s for s in client.get(body["quoted_sources_url"]).json() if s["quoted_as"] == "1"]
    provenance = source["provenance"]
    [quoted] = provenance["quoted_sentences"]
    start, end = quoted["source_start_char_idx"], quoted["source_end_char_idx"]
    assert source["chunk"]["data"][start:end] == quoted["source_sentence"]
    assert "seven years" in quoted["source_sentence"]
    assert quoted["section"].endswith("Records Retention")
    assert quoted["section"] != provenance["section"]  # the chunk's own starts earlier
    assert quoted["page_number"] is None  # Markdown has no pages
    markdown = client.get(f"/v1/flow/files/{source['document']['id']}/markdown").json()
    line = markdown["markdown"].splitlines()[quoted["line_number"] - 1]
    assert quoted["source_sentence"] in line
