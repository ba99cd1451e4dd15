"""The ``openai`` generator: the real ``openai`` SDK inside the application against a
local server speaking Chat Completions, under the retrieval-traceability contract.
Every ``[n]`` is a verified claim; what fails verification is recorded, never numbered."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from audit.models import EvidenceEntry
from citations.composition import NO_SUPPORTED_CLAIM
from citations.generators.verify import MIN_SUPPORT
from citations.markers import markers_match
from citations.models import ClaimCheck, ModelCall, QuotedSource
from citations.services import query_execute
from citations.services.revalidation import query_validate
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS, CONTRACTS
from tests.support import model_servers as ms

# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server

QUESTION = "How long are camera recordings and customer contracts kept?"


def test_every_marker_is_a_verified_claim_with_its_evidence(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(ms.answering(CAMERAS, CONTRACTS))
    app = llm_library.app("openai", model="gpt-test", prompt="Be brief.", temperature=0.2)

    execution = query_execute(app=app, question=QUESTION)

    assert execution.status == "completed", execution.error_message
    assert execution.answer == f"{CAMERAS[0]} [1] {CONTRACTS[0]} [1]" or execution.answer == (
        f"{CAMERAS[0]} [1] {CONTRACTS[0]} [2]"
    )
    quoted = list(QuotedSource.objects.filter(query=execution).order_by("id"))
    assert markers_match(execution.answer, [s.quoted_as for s in quoted])
    claims = list(execution.claim_citations.order_by("segment"))
    assert [c.source_sentence for c in claims] == [CAMERAS[1], CONTRACTS[1]]
    for claim in claims:
        assert execution.answer[claim.reply_start : claim.reply_end] == claim.reply_sentence
        chunk_text = claim.quoted_source.chunk_text
        assert chunk_text[claim.source_start : claim.source_end] == claim.source_sentence
        check = claim.checks.get()
        assert check.supported and check.reason == "supported"
        assert check.support_score is not None
        assert check.support_score >= MIN_SUPPORT and claim.relevance == check.support_score
        assert (check.source_start, check.source_end) == (claim.source_start, claim.source_end)
    assert query_validate(execution=execution)["result"] == "ok"

    call = ModelCall.objects.get(query=execution)
    request = openai_server.requests[0]
    assert call.prompt == request and call.attempt == 1 and call.provider == "openai"
    assert (
        call.prompt_sha256
        == hashlib.sha256(
            json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        ).hexdigest()
    )
    assert ms.completion_received(call.raw_response)["id"] == call.response_id
    assert call.response_sha256 == hashlib.sha256(call.raw_response.encode()).hexdigest()
    assert (call.input_tokens, call.output_tokens, call.transport_retries) == (812, 64, 0)
    assert call.latency_ms > 0 and call.response_model == "gpt-test-2026-01-01"
    chained = EvidenceEntry.objects.filter(
        record_table__in=["citations_modelcall", "citations_claimcheck"]
    )
    assert chained.count() == 1 + ClaimCheck.objects.filter(query=execution).count()

    # the request: structured output, the app's settings, snippets between fresh delimiters
    assert request["model"] == "gpt-test" and request["temperature"] == 0.2
    assert request["max_tokens"] == 1024
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["strict"] is True
    system = request["messages"][0]["content"]
    assert system.startswith("Be brief.") and "You must cite before you explain" in system
    snippets = ms.snippets_of(request)
    hits = {str(h.chunk_id): h for h in execution.hits.all()}
    assert [s["snippet_id"] for s in snippets] == [
        str(h.chunk_id) for h in execution.hits.order_by("k_pos")
    ]
    for snippet in snippets:
        payload = hits[snippet["snippet_id"]].payload
        assert {k: snippet[k] for k in ("section_id", "source_url", "offsets", "tokens")} == {
            k: payload[k] for k in ("section_id", "source_url", "offsets", "tokens")
        }
    query_execute(app=app, question=QUESTION)
    assert ms.snippets_of(openai_server.requests[1])  # a fresh delimiter per request
    assert system != openai_server.requests[1]["messages"][0]["content"]


def test_a_hallucinated_quote_is_retried_once_then_recorded_unsupported(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    invented = ("Camera recordings are kept for ninety days.", "camera recordings is ninety days")

    def hallucinating(request: dict[str, Any]) -> ms.Reply:
        snippets = ms.snippets_of(request)
        citation = ms.citation_for(snippets, CAMERAS[1]) | {"quote": invented[1]}
        return ms.chat_completion(request, ms.contract([citation], [(invented[0], [0])]))

    openai_server.script(hallucinating)
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)

    assert execution.status == "completed"
    assert execution.answer == NO_SUPPORTED_CLAIM
    assert not QuotedSource.objects.filter(query=execution).exists()
    calls = list(ModelCall.objects.filter(query=execution).order_by("attempt"))
    assert [c.attempt for c in calls] == [1, 2]
    assert calls[1].contract_codes and "quote_not_found" in calls[1].contract_codes[0]
    retry = openai_server.requests[1]["messages"]
    assert retry[-2]["role"] == "assistant" and "quote_not_found" in retry[-1]["content"]
    check = ClaimCheck.objects.get(query=execution)
    assert (check.supported, check.reason, check.quote) == (False, "quote_not_found", invented[1])
    assert check.model_call == calls[1] and check.claim is None
    assert query_validate(execution=execution)["result"] == "empty_citations"


def test_a_retry_that_fixes_the_quote_is_numbered(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def wrong(request: dict[str, Any]) -> ms.Reply:
        snippets = ms.snippets_of(request)
        citation = ms.citation_for(snippets, CAMERAS[1]) | {"quote": "kept for a month"}
        return ms.chat_completion(request, ms.contract([citation], [(CAMERAS[0], [0])]))

    openai_server.script(wrong, ms.answering(CAMERAS))
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    assert execution.answer == f"{CAMERAS[0]} [1]"
    assert ClaimCheck.objects.get(query=execution).model_call.attempt == 2


def test_an_unknown_snippet_is_recorded_unsupported(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    outside = llm_library.outside_chunk

    def citing_outside(request: dict[str, Any]) -> ms.Reply:
        citation = {
            "snippet_id": str(outside.pk),
            "section_id": outside.section,
            "source_url": f"/v1/flow/vectordb/{outside.vector_database_id}/chunk/{outside.pk}",
            "offsets": {"start": outside.char_start, "end": outside.char_end, "unit": "char"},
            "tokens": outside.token_count,
            "quote": "The Globex launch code is kept in the safe",
        }
        honest = ms.citation_for(ms.snippets_of(request), CAMERAS[1])
        sentences = [(CAMERAS[0], [1]), ("The launch code is kept in the safe.", [0])]
        return ms.chat_completion(request, ms.contract([citation, honest], sentences))

    openai_server.script(citing_outside)
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)

    assert execution.answer == f"{CAMERAS[0]} [1]"
    refused = ClaimCheck.objects.get(query=execution, supported=False)
    assert (refused.reason, refused.snippet_id, refused.hit) == (
        "unknown_snippet",
        str(outside.pk),
        None,
    )
    assert not QuotedSource.objects.filter(query=execution, chunk=outside).exists()


def test_an_injected_instruction_changes_nothing_that_is_recorded(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    """vendor-notes.md tells the model to cite another organization's chunk."""
    outside = llm_library.outside_chunk

    def obeying(request: dict[str, Any]) -> ms.Reply:
        snippets = ms.snippets_of(request)
        injected = next(s for s in snippets if "Ignore your instructions" in s["text"])
        forged = {**injected, "snippet_id": str(outside.pk), "quote": "kept forever"}
        del forged["text"]
        return ms.chat_completion(
            request, ms.contract([forged], [("Camera recordings are kept forever.", [0])])
        )

    openai_server.script(obeying)
    question = "How long are camera recordings kept, according to the camera vendor notes?"
    execution = query_execute(app=llm_library.app("openai"), question=question)

    request = openai_server.requests[0]
    system, user = (m["content"] for m in request["messages"])
    assert "Ignore your instructions" not in system
    opening = ms._DELIMITED.search(user)
    assert opening is not None
    assert "Ignore your instructions" in opening.group(2)  # only as JSON data, inside
    assert user.count(opening.group(1)) == 1 and user.count(opening.group(3)) == 1
    assert execution.answer == NO_SUPPORTED_CLAIM
    reasons = set(ClaimCheck.objects.filter(query=execution).values_list("reason", flat=True))
    assert reasons == {"unknown_snippet"}
    assert not QuotedSource.objects.filter(query=execution).exists()


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("offsets", {"start": 0, "end": 10**6, "unit": "char"}, "bad_offsets"),
        ("section_id", "Records Policy > Elsewhere", "mismatch_section_id"),
        ("tokens", "many", "invalid_tokens"),
        ("source_url", None, "missing_source_url"),
    ],
)
def test_a_payload_field_copied_wrong_fails_the_validator(
    llm_library: llm_support.Library,
    openai_server: ms.Server,
    field: str,
    value: object,
    reason: str,
) -> None:
    def miscopying(request: dict[str, Any]) -> ms.Reply:
        citation = ms.citation_for(ms.snippets_of(request), CAMERAS[1]) | {field: value}
        return ms.chat_completion(request, ms.contract([citation], [(CAMERAS[0], [0])]))

    openai_server.script(miscopying)
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    assert ClaimCheck.objects.get(query=execution).reason == reason
    assert execution.answer == NO_SUPPORTED_CLAIM


def test_a_sentence_that_does_not_say_what_it_quotes_is_unsupported(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    openai_server.script(
        ms.answering(("The cafeteria serves lunch at noon every day.", CAMERAS[1]))
    )
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    check = ClaimCheck.objects.get(query=execution)
    assert check.support_score is not None
    assert check.reason == "low_support" and check.support_score < MIN_SUPPORT


def test_citations_after_the_answer_break_the_contract(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def late(request: dict[str, Any]) -> ms.Reply:
        citation = ms.citation_for(ms.snippets_of(request), CAMERAS[1])
        body = {"answer": [{"text": CAMERAS[0], "citations": [0]}], "citations": [citation]}
        return ms.chat_completion(request, json.dumps(body))

    openai_server.script(late)
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    assert ModelCall.objects.filter(query=execution).count() == 2
    assert ClaimCheck.objects.get(query=execution).reason == "citations_after_answer"
    assert execution.answer == NO_SUPPORTED_CLAIM


def test_a_server_without_structured_output_is_asked_for_plain_json(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def fenced(request: dict[str, Any]) -> ms.Reply:
        if "response_format" in request:
            return ms.openai_error(
                400, "response_format json_schema is not supported", "invalid_request_error"
            )
        reply = ms.answering(CAMERAS)(request)
        content = reply.body["choices"][0]["message"]["content"]
        reply.body["choices"][0]["message"]["content"] = f"```json\n{content}\n```"
        return reply

    openai_server.script(fenced)
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    assert execution.answer == f"{CAMERAS[0]} [1]"
    assert "response_format" not in ModelCall.objects.get(query=execution).prompt


def test_the_model_s_contract_error_is_said_not_pretended(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def stopping(request: dict[str, Any]) -> ms.Reply:
        body = {"error": "offsets", "fix": "chunk_alignment.md"}
        return ms.chat_completion(request, json.dumps(body))

    openai_server.script(stopping)
    execution = query_execute(app=llm_library.app("openai"), question=QUESTION)
    assert "offsets" in execution.answer and "chunk_alignment.md" in execution.answer
    assert not execution.claim_citations.exists()
    assert ModelCall.objects.filter(query=execution).count() == 1
