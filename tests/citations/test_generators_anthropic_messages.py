"""The ``anthropic`` generator: the real ``anthropic`` SDK inside the application
against a local server speaking the Messages API with Citations. Each retrieved
chunk is one document block; the reply's ``content_block_location`` and
``char_location`` citations become claims once verified."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_django import Settings

from citations.composition import NO_SUPPORTED_CLAIM
from citations.generators.anthropic_messages import blocks_of
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


def test_content_block_citations_land_on_a_sentence_of_the_chunk(
    llm_library: llm_support.Library, anthropic_server: ms.Server
) -> None:
    anthropic_server.script(
        ms.claude(("Based on the documents: ", None), CAMERAS, (" ", None), CONTRACTS)
    )
    app = llm_library.app("anthropic", model="claude-test", prompt="Answer in English.")
    execution = query_execute(app=app, question=QUESTION)

    assert execution.status == "completed", execution.error_message
    assert execution.answer.startswith(f"{CAMERAS[0]} [1] {CONTRACTS[0]} [")
    quoted = list(QuotedSource.objects.filter(query=execution))
    assert markers_match(execution.answer, [s.quoted_as for s in quoted])
    request = anthropic_server.requests[0]
    assert anthropic_server.headers[0]["anthropic-version"]
    assert request["model"] == "claude-test" and request["max_tokens"] == 1024
    assert request["system"].startswith("Answer in English.")
    documents = ms.documents_of(request)
    hits = list(execution.hits.select_related("chunk", "file").order_by("k_pos"))
    assert len(documents) == len(hits)
    for document, hit in zip(documents, hits, strict=True):
        assert document["citations"] == {"enabled": True}
        assert document["title"].startswith(hit.file.name)
        text = hit.chunk.chunk_text
        blocks = [b["text"] for b in document["source"]["content"]]
        assert blocks == [text[a:b] for a, b in blocks_of(text)]
    for claim in execution.claim_citations.all():
        check = claim.checks.get()
        assert check.citation_type == "content_block_location"
        chunk_text = claim.quoted_source.chunk_text
        assert check.cited_block_index is not None
        block = blocks_of(chunk_text)[check.cited_block_index]
        assert (claim.source_start, claim.source_end) == block
        assert chunk_text[claim.source_start : claim.source_end] == claim.source_sentence
        assert execution.answer[claim.reply_start : claim.reply_end] == claim.reply_sentence
    call = ModelCall.objects.get(query=execution)
    assert (call.provider, call.input_tokens, call.output_tokens) == ("anthropic", 1540, 96)
    assert query_validate(execution=execution)["result"] == "ok"


def test_char_location_citations_of_plain_text_documents(
    llm_library: llm_support.Library, anthropic_server: ms.Server, settings: Settings
) -> None:
    settings.PROVENANCE_ANTHROPIC_DOCUMENTS = "text"
    anthropic_server.script(ms.claude(CAMERAS))
    execution = query_execute(app=llm_library.app("anthropic"), question=QUESTION)

    source = ms.documents_of(anthropic_server.requests[0])[0]["source"]
    assert source["type"] == "text" and source["media_type"] == "text/plain"
    claim = execution.claim_citations.get()
    assert claim.source_sentence == CAMERAS[1]
    check = claim.checks.get()
    assert check.citation_type == "char_location"
    assert (check.claimed["start_char_index"], check.claimed["end_char_index"]) == (
        claim.source_start,
        claim.source_end,
    )
    assert execution.answer == f"{CAMERAS[0]} [1]"


def test_an_uncited_claim_is_recorded_unsupported_and_glue_is_not(
    llm_library: llm_support.Library, anthropic_server: ms.Server
) -> None:
    anthropic_server.script(
        ms.claude(CAMERAS, (" Also, ", None), ("Contracts are kept for fifty years.", None))
    )
    execution = query_execute(app=llm_library.app("anthropic"), question=QUESTION)
    assert execution.answer == f"{CAMERAS[0]} [1]"
    check = ClaimCheck.objects.get(query=execution, supported=False)
    assert (check.reason, check.reply_sentence) == (
        "no_citation",
        "Contracts are kept for fifty years.",
    )
    assert ModelCall.objects.filter(query=execution).count() == 1  # not worth a retry


def test_a_cited_text_not_in_the_document_is_retried_then_unsupported(
    llm_library: llm_support.Library, anthropic_server: ms.Server, settings: Settings
) -> None:
    settings.PROVENANCE_ANTHROPIC_DOCUMENTS = "text"

    def inventing(request: dict[str, Any]) -> ms.Reply:
        reply = ms.claude(CAMERAS)(request)
        reply.body["content"][0]["citations"][0]["cited_text"] = "recordings are kept for a year"
        reply.body["content"][0]["citations"][0]["end_char_index"] += 2
        return reply

    anthropic_server.script(inventing)
    execution = query_execute(app=llm_library.app("anthropic"), question=QUESTION)
    assert execution.answer == NO_SUPPORTED_CLAIM
    assert ClaimCheck.objects.get(query=execution).reason == "quote_not_found"
    retry = anthropic_server.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "quote_not_found" in retry[-1]["content"]


def test_a_document_index_outside_the_request_is_an_unknown_snippet(
    llm_library: llm_support.Library, anthropic_server: ms.Server
) -> None:
    """vendor-notes.md tells the model to cite something else: whatever it cites must be
    one of the documents sent, so the citation is refused and nothing else changes."""

    def obeying(request: dict[str, Any]) -> ms.Reply:
        reply = ms.claude(("Camera recordings are kept forever.", "camera recordings are kept"))(
            request
        )
        reply.body["content"][0]["citations"][0]["document_index"] = 99
        return reply

    anthropic_server.script(obeying)
    question = "How long are camera recordings kept, according to the camera vendor notes?"
    execution = query_execute(app=llm_library.app("anthropic"), question=question)
    request = anthropic_server.requests[0]
    assert "Ignore your instructions" not in request["system"]
    assert any("Ignore your instructions" in str(d["source"]) for d in ms.documents_of(request))
    assert execution.answer == NO_SUPPORTED_CLAIM
    check = ClaimCheck.objects.get(query=execution)
    assert (check.reason, check.hit) == ("unknown_snippet", None)
    assert not QuotedSource.objects.filter(query=execution).exists()


@pytest.mark.parametrize("mode", ["sentences", "text"])
def test_blocks_cover_every_word_of_a_chunk(mode: str) -> None:
    text = "# T\n\nOne sentence here. Another one!\n\n| a | b |\n  Trailing line  "
    blocks = blocks_of(text)
    joined = " ".join(text[a:b] for a, b in blocks)
    assert joined.split() == text.split()
    assert all(text[a:b] == text[a:b].strip() and b > a for a, b in blocks)
