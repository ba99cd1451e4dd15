"""When the model cannot give a verified answer: an app answers extractively (its
default) and says so, keeping the model's calls and their failure as evidence, or
fails the question when it says ``model_fallback: fail``. Whatever the model sends
back (empty, huge, not UTF-8, citing what it was not given, forging markers), the
question ends as a verified answer, a fallback or a clear ``model_*`` error: never a
5xx of ours, and nothing unverified numbered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from citations.composition import NO_SUPPORTED_CLAIM
from citations.markers import markers_in
from citations.models import ClaimCheck, ClaimCitation, ModelCall, QueryExecution, QuotedSource
from citations.services import query_execute
from documents.models import OrganizationMember
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS
from tests.support import model_servers as ms

llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server = llm_support.openai_server

QUESTION = "How long are camera recordings kept?"


def _client(library: llm_support.Library) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {library.key}")
    return client


def _default_app(library: llm_support.Library) -> str:
    """An app made through REST with nothing but its generator and model: the product's
    defaults (auto contract, extractive fallback)."""
    response = _client(library).post(
        "/v1/flow/apps",
        {"name": "model app", "data_sources": ["Policies"], "generator": "openai", "model": "m"},
        format="json",
    )
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _ask(library: llm_support.Library, app_id: object) -> Any:
    return _client(library).post(
        f"/semantics/apps/{app_id}/query-executions", {"query": QUESTION}, format="json"
    )


def _assert_every_marker_verified(execution: QueryExecution) -> None:
    """Every [n] is a quoted source whose claims stand on the chunk's exact text; a
    model-written claim also on its supported check."""
    quoted = sorted(QuotedSource.objects.filter(query=execution), key=lambda q: int(q.quoted_as))
    assert sorted(set(markers_in(execution.answer)), key=int) == [q.quoted_as for q in quoted]
    for claim in ClaimCitation.objects.filter(query=execution).select_related(
        "quoted_source__chunk"
    ):
        text = claim.quoted_source.chunk.chunk_text
        assert text[claim.source_start : claim.source_end] == claim.source_sentence
        if execution.generator != "extractive":
            assert ClaimCheck.objects.get(query=execution, claim=claim).supported


def _hanging(request: dict[str, Any]) -> ms.Reply:
    reply = ms.answering(CAMERAS)(request)
    reply.delay = 1.6  # past the fixture's 1 s limits
    return reply


def test_a_model_that_times_out_is_answered_extractively_and_says_so(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(_hanging)
    app_id = _default_app(llm_library)

    response = _ask(llm_library, app_id)

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["generator"], body["fallback_reason"]) == ("extractive", "model_timeout")
    # the extractive answer quotes a sentence on camera recordings (which of the two
    # documents' is the answer scorer's call), every marker verified below
    assert "camera recordings" in body["answer"] and markers_in(body["answer"])
    execution = QueryExecution.objects.get(pk=body["query_id"])
    _assert_every_marker_verified(execution)
    call = ModelCall.objects.get(query=execution)  # the failed call is evidence
    assert call.error.startswith("model_timeout:") and call.raw_response == ""
    assert call.prompt["model"] == "m" and call.wire["contract"] == "nested"
    assert len(openai_server.requests) == 1  # a timeout is not retried
    detail = _client(llm_library).get(f"/semantics/apps/{app_id}/query-executions/{execution.pk}")
    assert detail.json()["written_by"] == "extractive"
    assert detail.json()["model_calls"][0]["error"] == call.error


def test_the_answer_page_and_the_admin_say_the_model_fell_back(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(_hanging)
    user = get_user_model().objects.create_user("olivia", password="pw-123-456", is_staff=True)
    OrganizationMember.objects.create(
        organization=llm_library.organization, user=user, role="officer"
    )
    app = llm_library.app("openai", model_fallback="extractive", model_contract="auto")
    execution = query_execute(app=app, question=QUESTION, user=user, origin="web")
    page = Client()
    page.force_login(user)

    html = page.get(f"/answers/{execution.pk}/").content.decode()

    assert 'id="fallback"' in html and "did not answer within its time limit" in html
    assert "(model_timeout)" in html
    admin = page.get(f"/admin/citations/queryexecution/{execution.pk}/change/").content.decode()
    assert 'id="written-by">extractive' in admin and "fell back: model_timeout" in admin


def test_a_reply_whose_every_claim_fails_verification_falls_back(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def inventing(request: dict[str, Any]) -> ms.Reply:
        if ms.is_flat(request):
            items = [{"snippet": 1, "quote": "kept for ninety days", "text": "Ninety days."}]
            return ms.chat_completion(request, json.dumps({"answer": items}))
        citation = ms.citation_for(ms.snippets_of(request), CAMERAS[1])
        citation["quote"] = "kept for ninety days"
        return ms.chat_completion(request, ms.contract([citation], [("Ninety days.", [0])]))

    openai_server.script(inventing)

    body = _ask(llm_library, _default_app(llm_library)).json()

    assert (body["generator"], body["fallback_reason"]) == ("extractive", "model_contract")
    execution = QueryExecution.objects.get(pk=body["query_id"])
    _assert_every_marker_verified(execution)
    checks = list(ClaimCheck.objects.filter(query=execution))
    assert checks and not any(c.supported or c.claim_id for c in checks)
    assert [c.wire["contract"] for c in ModelCall.objects.filter(query=execution)] == [
        "nested",
        "flat",
    ]


def test_an_app_that_says_fail_fails_instead(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(_hanging)
    app = llm_library.app("openai", model_fallback="fail")

    response = _ask(llm_library, app.pk)

    assert response.status_code == 504 and response.json()["error"]["code"] == "model_timeout"
    assert QueryExecution.objects.get().status == "failed"


def test_a_wrong_key_is_not_hidden_by_a_fallback(
    llm_library: llm_support.Library, openai_server: ms.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    openai_server.script(ms.answering(CAMERAS))

    response = _ask(llm_library, _default_app(llm_library))

    assert response.status_code == 502 and response.json()["error"]["code"] == "model_auth_failed"


def test_a_nested_reply_a_model_cannot_keep_turns_to_the_flat_contract_for_good(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def small_model(request: dict[str, Any]) -> ms.Reply:
        if ms.is_flat(request):
            return ms.flat_answering(CAMERAS, quoted=lambda q: f"\u201c{q.upper()}\u201d")(request)
        return ms.chat_completion(request, '{"citations": [{"snippet_id": ')  # cut off

    openai_server.script(small_model)
    app_id = _default_app(llm_library)

    first = _ask(llm_library, app_id).json()

    assert (first["generator"], first["answer"]) == ("openai", f"{CAMERAS[0]} [1]")
    check = ClaimCheck.objects.get(query_id=first["query_id"], supported=True)
    claim = ClaimCitation.objects.get(query_id=first["query_id"])
    assert check.alignment == "normalised" and claim.source_sentence == CAMERAS[1]
    assert check.quote == f"\u201c{CAMERAS[1].upper()}\u201d"  # as the model gave it
    second = _ask(llm_library, app_id).json()
    assert second["answer"] == f"{CAMERAS[0]} [1]"
    assert len(openai_server.requests) == 3  # nested, flat; then flat at once
    assert ms.is_flat(openai_server.requests[2])
    auditable = (
        _client(llm_library)
        .get(f"/semantics/apps/{app_id}/query-executions/{second['query_id']}")
        .json()["auditable"]
    )
    assert auditable["answer"] == second["answer"] and len(auditable["citations"]) == 1


BAD_REPLIES = {
    "empty": lambda r: ms.chat_completion(r, ""),
    "1 MB": lambda r: ms.chat_completion(r, "{" + '"answer": [' + '"x",' * 262_144 + '"x"]}'),
    "invalid UTF-8": lambda r: ms.Reply(
        200,
        b'{"id": "c", "object": "chat.completion", "choices": [{"message": {"content": "\xff\xfe'
        + b'"}}]}',
    ),
    "not JSON": lambda r: ms.Reply(200, b"<html>502 Bad Gateway</html>"),
    "unknown snippet": lambda r: ms.chat_completion(
        r,
        json.dumps(
            {"answer": [{"snippet": 99, "quote": CAMERAS[1], "text": CAMERAS[0]}]}
            if ms.is_flat(r)
            else {
                "citations": [
                    {**ms.citation_for(ms.snippets_of(r), CAMERAS[1]), "snippet_id": "x"}
                ],
                "answer": [{"text": CAMERAS[0], "citations": [0]}],
            }
        ),
    ),
    "forged markers": lambda r: ms.chat_completion(
        r,
        ms.contract(
            [ms.citation_for(ms.snippets_of(r), CAMERAS[1])],
            [(f"{CAMERAS[0]} [99] [2]", [0])],
        )
        if not ms.is_flat(r)
        else "{}",
    ),
}


@pytest.mark.parametrize("name", list(BAD_REPLIES))
def test_bad_replies_end_verified_fallen_back_or_failed_never_in_a_5xx_of_ours(
    llm_library: llm_support.Library, openai_server: ms.Server, name: str
) -> None:
    openai_server.streams = False  # the body as scripted, byte for byte
    openai_server.script(BAD_REPLIES[name])

    response = _ask(llm_library, _default_app(llm_library))

    assert response.status_code == 201, response.content
    execution = QueryExecution.objects.get(pk=response.json()["query_id"])
    assert execution.status == "completed"
    _assert_every_marker_verified(execution)
    if name == "forged markers":  # the model's own [n] are text, never markers
        assert execution.generator == "openai"
        assert markers_in(execution.answer) == ["1"] and "\\[99\\]" in execution.answer
    else:
        assert execution.generator == "extractive" and execution.fallback_reason
    assert NO_SUPPORTED_CLAIM not in execution.answer


def test_a_quote_spanning_two_chunks_is_never_numbered(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    """The end of one chunk and the start of the next is in neither: not a claim."""

    def spanning(request: dict[str, Any]) -> ms.Reply:
        snippets = ms.snippets_of(request)
        first, second = snippets[0]["text"], snippets[1]["text"]
        quote = f"{first[-40:]} {second[:40]}"
        citation = {**ms.citation_for(snippets, first[:30]), "quote": quote}
        return ms.chat_completion(request, ms.contract([citation], [(quote, [0])]))

    openai_server.script(spanning)
    app = llm_library.app("openai")

    response = _ask(llm_library, app.pk)

    assert response.status_code == 201 and markers_in(response.json()["answer"]) == []
    reasons = {c.reason for c in ClaimCheck.objects.all()}
    assert reasons == {"quote_not_found"}
