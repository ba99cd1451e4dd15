"""The OpenAPI schema describes the Responses API and both streaming answers."""

from __future__ import annotations

import pytest

from tests.support.openapi import generated_schema


@pytest.fixture(scope="module")
def schema() -> dict:
    return generated_schema()


def test_it_documents_the_responses_api_and_its_event_stream(schema: dict) -> None:
    create = schema["paths"]["/v1/responses"]["post"]
    content = create["responses"]["200"]["content"]
    assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/ResponseObject"}
    assert content["text/event-stream"]["schema"] == {"type": "string"}
    assert set(create["requestBody"]["content"]) == {"application/json"}
    assert {"model", "input"} <= set(
        schema["components"]["schemas"]["ResponseCreateInput"]["required"]
    )
    assert {"get", "delete"} <= set(schema["paths"]["/v1/responses/{response_id}"])
    annotation = schema["components"]["schemas"]["ResponseFileCitation"]["properties"]
    assert {"file_id", "filename", "index", "chunk_id", "vector_store_id"} <= set(annotation)
    for code in ("400", "401", "404"):
        assert "application/json" in create["responses"][code]["content"]


def test_it_documents_a_streamed_run(schema: dict) -> None:
    runs = schema["paths"]["/v1/threads/{thread_id}/runs"]
    content = runs["post"]["responses"]["200"]["content"]
    assert set(content) == {"application/json", "text/event-stream"}
    assert set(runs["get"]["responses"]["200"]["content"]) == {"application/json"}
