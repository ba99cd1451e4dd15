"""Wire negotiation with OpenAI-compatible servers: the strongest structured output
first, one step down per refusal (recognised by status and body, never retried), what
a server accepts remembered for the process and recorded on every call; streamed
replies, and servers that ignore ``stream``."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from citations.generators.wire import Wire, refusal_step
from citations.models import ClaimCheck, ModelCall, QueryExecution
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS
from tests.support import model_servers as ms

llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server = llm_support.openai_server

QUESTION = "How long are camera recordings kept?"

# llama-cpp-python 0.3.36's refusal of json_schema, as its server words it (HTTP 500)
LLAMA_CPP_PYTHON_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)
REFUSALS = [
    (
        "400 unsupported",
        400,
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
        "this model.",
    ),
    (
        "422 pydantic",
        422,
        "[{'type': 'extra_forbidden', 'loc': ('body', 'response_format', 'json_schema'), "
        "'msg': 'Extra inputs are not permitted'}]",
    ),
    ("500 validation", 500, LLAMA_CPP_PYTHON_500),
    ("404 unknown field", 404, "unknown field response_format.json_schema"),
]


def _refusing(status: int, message: str, refused: str) -> ms.Script:
    """A server that refuses any request carrying ``refused`` (a field path) and
    answers the rest."""

    def reply(request: dict[str, Any]) -> ms.Reply:
        value: Any = request
        for part in refused.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and (refused != "response_format.type" or value == "json_schema"):
            return ms.openai_error(status, message, "invalid_request_error")
        return ms.answering(CAMERAS)(request)

    return reply


def _ask(library: llm_support.Library, app_id: object, question: str = QUESTION) -> Any:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    return client.post(
        f"/semantics/apps/{app_id}/query-executions", {"query": question}, format="json"
    )


@pytest.mark.parametrize(
    ("status", "message"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_a_refused_json_schema_steps_down_once_and_is_remembered(
    llm_library: llm_support.Library, openai_server: ms.Server, status: int, message: str
) -> None:
    openai_server.script(_refusing(status, message, "response_format.type"))
    app = llm_library.app("openai")

    first = _ask(llm_library, app.pk)

    assert first.status_code == 201, first.content
    assert first.json()["answer"] == f"{CAMERAS[0]} [1]" and first.json()["generator"] == "openai"
    formats = [r.get("response_format", {}).get("type") for r in openai_server.requests]
    assert formats == ["json_schema", "json_object"]  # not retried: stepped down at once
    assert openai_server.requests[1]["response_format"]["schema"]["required"]
    call = ModelCall.objects.get(query_id=first.json()["query_id"])
    assert call.wire["refused"] == [f"response_format=json_schema ({status})"]
    assert call.wire["response_format"] == "json_object_schema"
    assert call.wire["remembered"] is False and call.prompt == openai_server.requests[1]

    second = _ask(llm_library, app.pk)

    assert second.status_code == 201 and second.json()["answer"] == f"{CAMERAS[0]} [1]"
    assert len(openai_server.requests) == 3  # the refusal is paid once per server and model
    assert openai_server.requests[2]["response_format"]["type"] == "json_object"
    again = ModelCall.objects.get(query_id=second.json()["query_id"])
    assert again.wire["remembered"] is True and again.wire["refused"] == call.wire["refused"]


def test_each_refused_parameter_steps_down_to_a_request_the_server_takes(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    """A strict server (OpenAI's newer models, a proxy) refusing one thing after another:
    each refusal weakens only what it names, in as many requests as refusals."""

    def strict(request: dict[str, Any]) -> ms.Reply:
        if request.get("response_format", {}).get("type") == "json_schema":
            return ms.openai_error(400, "response_format json_schema is not supported", "x")
        if "schema" in request.get("response_format", {}):
            return ms.openai_error(400, "Unrecognized request argument: schema", "x")
        if "max_tokens" in request:
            return ms.openai_error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "invalid_request_error",
            )
        if "seed" in request:
            return ms.openai_error(400, "Unknown parameter: 'seed'.", "invalid_request_error")
        if "temperature" in request:
            return ms.openai_error(
                400, "Unsupported value: 'temperature' does not support 0.2", "x"
            )
        if request.get("stream"):
            return ms.openai_error(400, "stream is not supported for this model", "x")
        return ms.answering(CAMERAS)(request)

    openai_server.script(strict)
    app = llm_library.app("openai", temperature=0.2)

    response = _ask(llm_library, app.pk)

    assert response.status_code == 201, response.content
    assert response.json()["answer"] == f"{CAMERAS[0]} [1]"
    last = openai_server.requests[-1]
    assert last["response_format"] == {"type": "json_object"} and "max_completion_tokens" in last
    assert not {"max_tokens", "seed", "temperature", "stream"} & set(last)
    assert len(openai_server.requests) == 7  # six refusals, then the answer
    wire = ModelCall.objects.get(query_id=response.json()["query_id"]).wire
    assert wire["refused"] == [
        "response_format=json_schema (400)",
        "response_format=json_object_schema (400)",
        "max_tokens (400)",
        "seed (400)",
        "temperature (400)",
        "stream (400)",
    ]
    assert (wire["length"], wire["stream"], wire["seed"]) == ("max_completion_tokens", False, False)


def test_a_server_error_that_names_nothing_is_retried_not_stepped_down(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(lambda r: ms.openai_error(500, "The server had an error", "server_error"))
    app = llm_library.app("openai", model_fallback="extractive")

    response = _ask(llm_library, app.pk)

    assert response.status_code == 201, response.content
    assert all(r["response_format"]["type"] == "json_schema" for r in openai_server.requests)
    assert len(openai_server.requests) == 3  # 1 + PROVENANCE_LLM_MAX_RETRIES
    body = response.json()
    assert (body["generator"], body["fallback_reason"]) == ("extractive", "model_unavailable")


def test_a_value_error_is_not_mistaken_for_a_refused_parameter() -> None:
    wire = Wire()
    assert refusal_step(wire, status=400, body="max_tokens is too large: 99999999") is None
    assert refusal_step(wire, status=500, body="CUDA out of memory") is None
    assert refusal_step(wire, status=401, body="invalid api key for response_format") is None
    weaker = refusal_step(wire, status=500, body=LLAMA_CPP_PYTHON_500)
    assert weaker is not None and weaker.response_format == "json_object_schema"
    floor = Wire(response_format="none", stream=False, temperature=False, seed=False)
    assert refusal_step(floor, status=422, body="validation error: response_format") is None


def test_a_server_that_ignores_stream_is_read_from_its_json_body(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.streams = False
    openai_server.script(ms.answering(CAMERAS))

    response = _ask(llm_library, llm_library.app("openai").pk)

    assert response.status_code == 201 and response.json()["answer"] == f"{CAMERAS[0]} [1]"
    assert openai_server.requests[0]["stream"] is True
    call = ModelCall.objects.get(query_id=response.json()["query_id"])
    assert call.wire["streamed"] is False and call.raw_response.startswith("{")


def test_a_streamed_reply_is_kept_as_received(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(ms.answering(CAMERAS))

    response = _ask(llm_library, llm_library.app("openai").pk)

    call = ModelCall.objects.get(query_id=response.json()["query_id"])
    assert call.wire["streamed"] is True and call.wire["first_token_ms"] is not None
    assert call.raw_response.startswith("data: ") and call.raw_response.endswith("[DONE]")
    assert call.response_id == ms.completion_received(call.raw_response)["id"]
    assert (call.input_tokens, call.output_tokens, call.finish_reason) == (812, 64, "stop")
    check = ClaimCheck.objects.get(query_id=response.json()["query_id"])
    assert check.supported and check.alignment == "exact" and check.edit_distance is None
    detail = APIClient()
    detail.credentials(HTTP_AUTHORIZATION=f"Bearer {llm_library.key}")
    execution = QueryExecution.objects.get(pk=response.json()["query_id"])
    body = detail.get(f"/semantics/apps/{execution.app_id}/query-executions/{execution.pk}").json()
    assert body["model_calls"][0]["wire"]["response_format"] == "json_schema"
    assert body["claim_checks"][0]["alignment"] == "exact"
