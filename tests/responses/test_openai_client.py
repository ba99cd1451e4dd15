"""The Responses API driven by the official ``openai`` package against a live
server: ``responses.create`` → ``file_citation`` annotation → chunk and quoted
sources → the quoted passage; the same answer streamed; a follow-up chained by
``previous_response_id``; and the client's typed errors for another tenant."""

from __future__ import annotations

from collections.abc import Sequence

import openai
import pytest
from django.utils import timezone
from openai.types.responses import (
    Response,
    ResponseFileSearchToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_output_text import AnnotationFileCitation
from openai.types.responses.response_output_text_annotation_added_event import (
    AnnotationFileCitation as AddedFileCitation,
)
from pydantic import BaseModel
from pytest_django.live_server_helper import LiveServer

from citations.llm_apps import app_create
from citations.models import QueryExecution, ResponseRecord
from core.api_keys import api_key_create
from documents.models import ApiKey
from tests import factories
from tests.support.openapi import assert_documented, generated_schema
from tests.support.worker import WorkerProcess
from tests.threads.conftest import CONTRACTS, SURVEILLANCE, Http, Tenant, tenant_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

OPENING = "Who operates the surveillance cameras?"
FOLLOW_UP = "What about its retention period?"
STREAM_NAMES = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.file_search_call.in_progress",
    "response.file_search_call.searching",
    "response.file_search_call.completed",
    "response.output_item.done",
    "response.output_item.added",
    "response.content_part.added",
]
CLOSING_NAMES = [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


def _client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=f"{url}/v1", max_retries=0)


def _text_of(response: Response) -> ResponseOutputText:
    """The text of a response's message, the output item after the file search call."""
    message = response.output[1]
    assert isinstance(message, ResponseOutputMessage), message
    text = message.content[0]
    assert isinstance(text, ResponseOutputText), text
    return text


def _citations(annotations: Sequence[object]) -> list[AnnotationFileCitation]:
    """The annotations, each a ``file_citation``."""
    citations = [a for a in annotations if isinstance(a, AnnotationFileCitation)]
    assert len(citations) == len(annotations), annotations
    return citations


def _added(annotation: object) -> AddedFileCitation:
    """The annotation of a stream's ``annotation.added`` event, a ``file_citation``."""
    assert isinstance(annotation, AddedFileCitation), annotation
    return annotation


def _extension(model: BaseModel, name: str) -> str:
    """A field the server adds to OpenAI's shape (``query_id``, a citation's ``chunk_id``):
    the client keeps it as an extra."""
    extra = model.model_extra
    assert extra is not None and isinstance(extra.get(name), str), (name, extra)
    return extra[name]


def test_it_answers_with_annotations_that_lead_to_the_quoted_passage(
    celery_worker: WorkerProcess, live_server: LiveServer
) -> None:
    tenant = tenant_with(
        "Acme", {"surveillance.md": SURVEILLANCE.encode(), "contracts.md": CONTRACTS.encode()}
    )
    client, http = _client(live_server.url, tenant.key), Http(live_server.url, tenant.key)
    store = str(tenant.app.data_sources.get().vector_database_id)

    response = client.responses.create(
        model=str(tenant.app.pk),
        input=OPENING,
        tools=[{"type": "file_search", "vector_store_ids": [store]}],
        include=["file_search_call.results"],
        metadata={"case": "cctv"},
    )
    assert (response.object, response.status, response.metadata) == (
        "response",
        "completed",
        {"case": "cctv"},
    )
    searched, message = response.output
    assert isinstance(searched, ResponseFileSearchToolCall), searched
    assert isinstance(message, ResponseOutputMessage), message
    assert searched.type == "file_search_call" and searched.queries == [OPENING]
    assert searched.results and searched.results[0].filename == "surveillance.md"
    assert message.type == "message" and message.role == "assistant"
    text = _text_of(response)
    assert response.output_text == text.text and "security desk" in text.text
    assert response.usage is not None
    assert text.annotations and response.usage.total_tokens == 0

    # annotation → the quoted source of the answer's query execution → the chunk → the passage
    execution = QueryExecution.objects.get(pk=_extension(response, "query_id"))
    assert execution.origin == "response" and execution.answer == text.text
    quoted = http.get(
        f"/semantics/apps/{tenant.app.pk}/query-execution-sources/{execution.pk}/get-quoted-sources"
    ).json()
    by_number = {q["quoted_as"]: q for q in quoted}
    for annotation in _citations(text.annotations):
        assert annotation.type == "file_citation"
        chunk_id, quote = _extension(annotation, "chunk_id"), _extension(annotation, "quote")
        marked = _extension(annotation, "text")
        marker = text.text[annotation.index : annotation.index + len(marked)]
        assert marker == marked and marker.startswith("[")
        assert annotation.file_id == str(tenant.files[annotation.filename].pk)
        source = by_number[marker.strip("[]")]
        assert source["document"]["id"] == annotation.file_id
        assert source["chunk"]["id"] == chunk_id
        assert (
            _extension(annotation, "vector_store_id")
            == source["provenance"]["database_id"]
            == store
        )
        sentences = [s["source_sentence"] for s in source["provenance"]["quoted_sentences"]]
        assert quote in sentences
        chunk = http.get(source["provenance"]["chunk_url"].removeprefix(live_server.url)).json()
        assert (chunk["chunk_id"], chunk["file_id"]) == (chunk_id, annotation.file_id)
        assert quote in chunk["chunk_text"]

    # GET answers the same object; the record points at its evidence
    again = client.responses.retrieve(response.id, include=["file_search_call.results"])
    assert again.model_dump() == response.model_dump()
    assert ResponseRecord.objects.get(pk=response.id).query_id == execution.pk
    schema = generated_schema()
    raw = http.get(f"/v1/responses/{response.id}?include[]=file_search_call.results")
    assert raw.json() == again.model_dump(mode="json", exclude_unset=True)
    assert_documented(schema, 200, raw.json(), "/v1/responses/{response_id}", "get")
    raw = http.post(
        "/v1/responses",
        {
            "model": str(tenant.app.pk),
            "input": [{"role": "user", "content": [{"type": "input_text", "text": OPENING}]}],
        },
    )
    assert_documented(schema, 200, raw.json(), "/v1/responses", "post")
    assert raw.json()["output"][1]["content"][0]["text"] == text.text
    refused = http.post("/v1/responses", {"model": str(tenant.app.pk)})
    assert_documented(schema, 400, refused.json(), "/v1/responses", "post")

    # the same question streamed: the events in order, the text rebuilt from the deltas
    with client.responses.stream(model=str(tenant.app.pk), input=OPENING) as stream:
        events = list(stream)
        final = stream.get_final_response()
    names = [e.type for e in events]
    assert names[: len(STREAM_NAMES)] == STREAM_NAMES
    assert names[-len(CLOSING_NAMES) :] == CLOSING_NAMES
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    added = [
        _added(e.annotation) for e in events if e.type == "response.output_text.annotation.added"
    ]
    assert deltas == final.output_text == text.text
    assert [a.index for a in added] == [a.index for a in _citations(text.annotations)]
    assert [a.model_dump() for a in _text_of(final).annotations] == [
        a.model_dump() for a in text.annotations
    ]
    stored = client.responses.retrieve(final.id)  # what the stream ended with is what is kept
    assert (stored.status, stored.output_text, stored.usage) == (
        final.status,
        final.output_text,
        final.usage,
    )
    assert _text_of(stored).annotations == _text_of(final).annotations

    # a follow-up chained by previous_response_id is searched with the conversation
    follow_up = client.responses.create(
        model=str(tenant.app.pk), input=FOLLOW_UP, previous_response_id=response.id
    )
    assert follow_up.previous_response_id == response.id
    first_claim = follow_up.output_text[: follow_up.output_text.index("[1]")]
    assert "thirty days" in first_claim and "ten years" not in first_claim
    assert _citations(_text_of(follow_up).annotations)[0].filename == "surveillance.md"
    follow_up_query = _extension(follow_up, "query_id")
    assert QueryExecution.objects.get(pk=follow_up_query).question == FOLLOW_UP

    # deleting hides the response; its evidence stays
    client.responses.delete(follow_up.id)  # typed to return None: raises if refused
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(follow_up.id)
    assert QueryExecution.objects.filter(pk=follow_up_query).exists()

    _it_raises_the_clients_typed_errors(live_server.url, tenant, response.id, store)


def _it_raises_the_clients_typed_errors(
    url: str, tenant: Tenant, response_id: str, store: str
) -> None:
    stranger = factories.organization("Globex")
    factories.data_source(stranger, "Globex docs")
    their_app = app_create(organization=stranger, name="Globex", data_source_names=["Globex docs"])
    their_store = str(their_app.data_sources.get().vector_database_id)
    other, client = _client(url, factories.api_key(stranger)), _client(url, tenant.key)

    with pytest.raises(openai.NotFoundError) as missing:  # another organization's app
        other.responses.create(model=str(tenant.app.pk), input=OPENING)
    assert (missing.value.code, missing.value.param) == ("model_not_found", "model")
    with pytest.raises(openai.NotFoundError):  # another organization's response
        other.responses.retrieve(response_id)
    with pytest.raises(openai.NotFoundError) as chained:
        other.responses.create(
            model=str(their_app.pk), input=FOLLOW_UP, previous_response_id=response_id
        )
    assert chained.value.param == "previous_response_id"
    with pytest.raises(openai.NotFoundError) as foreign:  # another organization's store
        client.responses.create(
            model=str(tenant.app.pk),
            input=OPENING,
            tools=[{"type": "file_search", "vector_store_ids": [store, their_store]}],
        )
    assert foreign.value.param == "tools[0].vector_store_ids[1]"
    with pytest.raises(openai.BadRequestError) as tool:
        client.responses.create(
            model=str(tenant.app.pk), input=OPENING, tools=[{"type": "web_search"}]
        )
    assert (tool.value.code, tool.value.param) == ("unsupported_tool", "tools[0].type")
    with pytest.raises(openai.AuthenticationError):
        _client(url, "pk_wrong").responses.create(model=str(tenant.app.pk), input=OPENING)
    key, secret = api_key_create(organization=tenant.organization)
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    with pytest.raises(openai.AuthenticationError):
        _client(url, secret).responses.create(model=str(tenant.app.pk), input=OPENING)
    assert not ResponseRecord.objects.filter(organization=stranger).exists()
