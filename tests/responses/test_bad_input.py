"""Malformed ``POST /v1/responses`` bodies get the OpenAI error shape with the
status and ``param`` the openai client maps to its typed errors — before any
record is written, and never a 500."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from citations.llm_apps import app_create
from citations.models import ResponseRecord
from core.api_keys import api_key_create
from documents.models import ApiKey, DataSource
from retrieval.models import VectorDatabase
from tests import factories

pytestmark = pytest.mark.django_db


class Caller:
    def __init__(self, name: str) -> None:
        self.organization = factories.organization(name)
        source = factories.data_source(self.organization, "Policies")
        self.store = str(source.vector_database_id)
        self.app = app_create(
            organization=self.organization, name="Assistant", data_source_names=["Policies"]
        )
        key = factories.api_key(self.organization)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def post(self, body: object) -> tuple[int, dict]:
        response = self.client.post("/v1/responses", json.dumps(body), "application/json")
        return response.status_code, response.json()


@pytest.fixture
def acme() -> Caller:
    return Caller("Acme")


def _error(reply: tuple[int, dict], status: int, code: str, param: str | None) -> None:
    got, body = reply
    assert got == status, body
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert (body["error"]["code"], body["error"]["param"]) == (code, param), body


BAD_BODIES = [
    # (body without model, code, param); the model is added unless the body says otherwise
    ({"input": "Hi?", "model": None}, "missing_required_parameter", "model"),
    ({"input": "Hi?", "model": 7}, "missing_required_parameter", "model"),
    ({}, "missing_required_parameter", "input"),
    ({"input": 42}, "invalid_input", "input"),
    ({"input": []}, "invalid_input", "input"),
    ({"input": "   "}, "empty_content", "input"),
    ({"input": "x" * 2001}, "content_too_long", "input"),
    ({"input": ["Hi?"]}, "invalid_input", "input[0]"),
    ({"input": [{"role": "robot", "content": "Hi?"}]}, "invalid_role", "input[0].role"),
    ({"input": [{"type": "function_call_output", "output": "1"}]}, "unsupported_input",
     "input[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_image"}]}]}, "unsupported_content",
     "input[0].content"),
    ({"input": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Yes."}]},
     "no_user_message", "input"),
    ({"input": "Hi?", "instructions": ["be brief"]}, "invalid_type", "instructions"),
    ({"input": "Hi?", "tools": {"type": "file_search"}}, "invalid_type", "tools"),
    ({"input": "Hi?", "tools": ["file_search"]}, "invalid_type", "tools[0]"),
    ({"input": "Hi?", "tools": [{"type": "web_search"}]}, "unsupported_tool", "tools[0].type"),
    ({"input": "Hi?", "tools": [{"type": "file_search", "vector_store_ids": "vs_1"}]},
     "invalid_type", "tools[0].vector_store_ids"),
    ({"input": "Hi?", "tools": [{"type": "file_search", "filters": {"type": "eq"}}]},
     "unsupported", "tools[0].filters"),
    ({"input": "Hi?", "include": ["message.output_text.logprobs"]}, "invalid_include", "include"),
    ({"input": "Hi?", "include": "file_search_call.results"}, "invalid_include", "include"),
    ({"input": "Hi?", "stream": "yes"}, "invalid_type", "stream"),
    ({"input": "Hi?", "background": True}, "unsupported", "background"),
    ({"input": "Hi?", "metadata": {"k": 1}}, "invalid_metadata", "metadata"),
    ({"input": "Hi?", "previous_response_id": 3}, "invalid_type", "previous_response_id"),
    ({"input": "Hi?", "modle": "x"}, "unknown_parameter", "modle"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "code", "param"), BAD_BODIES)
def test_it_refuses_malformed_bodies(
    acme: Caller, body: dict[str, Any], code: str, param: str | None
) -> None:
    _error(acme.post({"model": str(acme.app.pk), **body}), 400, code, param)
    assert not ResponseRecord.objects.exists()


@pytest.mark.parametrize("body", [[], "question", 3, None])
def test_it_refuses_a_body_that_is_not_an_object(acme: Caller, body: object) -> None:
    _error(acme.post(body), 400, "invalid_body", None)


def test_it_does_not_find_what_another_organization_owns(acme: Caller) -> None:
    globex = Caller("Globex")
    unknown = str(uuid.uuid4())
    for model in (str(globex.app.pk), unknown, "gpt-4o"):
        _error(acme.post({"model": model, "input": "Hi?"}), 404, "model_not_found", "model")
    tools = [{"type": "file_search", "vector_store_ids": [acme.store, globex.store]}]
    _error(
        acme.post({"model": str(acme.app.pk), "input": "Hi?", "tools": tools}),
        404,
        "not_found",
        "tools[0].vector_store_ids[1]",
    )
    theirs = ResponseRecord.objects.create(
        organization=globex.organization, app=globex.app, question="Hi?", input=[]
    )
    for previous in (str(theirs.pk), unknown, "resp_abc"):
        body = {"model": str(acme.app.pk), "input": "Hi?", "previous_response_id": previous}
        _error(acme.post(body), 404, "not_found", "previous_response_id")
    for method in ("get", "delete"):
        reply = getattr(acme.client, method)(f"/v1/responses/{theirs.pk}")
        assert reply.status_code == 404 and reply.json()["error"]["code"] == "not_found"
    assert ResponseRecord.objects.count() == 1


def test_it_refuses_a_store_of_the_organization_the_app_does_not_search(acme: Caller) -> None:
    default = VectorDatabase.objects.get(pk=acme.store)
    other = VectorDatabase.objects.create(
        organization=acme.organization,
        name="Other",
        embed_model=default.embed_model,
        embed_dimensions=default.embed_dimensions,
    )
    tools = [{"type": "file_search", "vector_store_ids": [str(other.pk)]}]
    _error(
        acme.post({"model": str(acme.app.pk), "input": "Hi?", "tools": tools}),
        400,
        "vector_store_not_in_app",
        "tools[0].vector_store_ids[0]",
    )
    DataSource.objects.create(organization=acme.organization, name="Archive", vector_database=other)
    both = app_create(
        organization=acme.organization, name="Both", data_source_names=["Policies", "Archive"]
    )
    part = [{"type": "file_search", "vector_store_ids": [acme.store]}]
    _error(
        acme.post({"model": str(both.pk), "input": "Hi?", "tools": part}),
        400,
        "unsupported",
        "tools[0].vector_store_ids",
    )
    assert not ResponseRecord.objects.exists()


def test_it_needs_a_valid_key(acme: Caller) -> None:
    body = json.dumps({"model": str(acme.app.pk), "input": "Hi?"})
    for headers in (
        {},
        {"Authorization": "Bearer pk_nope"},
        {"Authorization": "Basic x"},
    ):
        reply = Client(headers=headers).post("/v1/responses", body, "application/json")
        assert reply.status_code in (401, 403), headers
        assert reply.json()["error"]["type"] in ("authentication_error", "permission_error")
    record, secret = api_key_create(organization=acme.organization)
    ApiKey.objects.filter(pk=record.pk).update(revoked_at=timezone.now())
    reply = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").post(
        "/v1/responses", body, "application/json"
    )
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "invalid_api_key"
    assert not ResponseRecord.objects.exists()
