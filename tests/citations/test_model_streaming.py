"""Model answers read as they stream: each sentence is reported once it is complete
and verified, before the rest of the reply exists (the test server holds the rest
until the application has shown the first sentence); nothing unverified is reported;
a retry or a fallback is announced as a restart; a stream that breaks off ends as a
fallback or a clear ``model_*`` failure; the stored answer is the one a reply read
whole gives. Against the OpenAI and Anthropic wire-format servers, with the real SDKs."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from citations.composition import compose_sentences
from citations.generators import ModelError
from citations.generators.live import LiveEvent, LiveSentence, Restart, live_listen
from citations.models import ClaimCitation, ModelCall, QueryExecution
from citations.services import query_execute
from documents.models import OrganizationMember
from tests.citations import llm_support
from tests.citations.llm_support import CAMERAS, CONTRACTS
from tests.support import model_servers as ms
from tests.support.http import streamed

# the shared fixtures of tests/citations/llm_support.py, used in this module
llm_library, fast_retries = llm_support.llm_library, llm_support.fast_retries
openai_server, anthropic_server = llm_support.openai_server, llm_support.anthropic_server

QUESTION = "How long are camera recordings and customer contracts kept?"
INVENTED = "Visitors may watch the recordings on request."


def _two_claims(request: dict[str, Any], *, second_quote: str = CONTRACTS[1]) -> str:
    snippets = ms.snippets_of(request)
    citations = [ms.citation_for(snippets, CAMERAS[1]), ms.citation_for(snippets, CONTRACTS[1])]
    citations[1] = {**citations[1], "quote": second_quote}
    return ms.contract(citations, [(CAMERAS[0], [0]), (CONTRACTS[0], [1])])


def _held(content: str, request: dict[str, Any], gate: threading.Event) -> ms.Reply:
    """The reply streamed in two pieces, cut right after the first sentence's object;
    the second waits until ``gate`` is set."""
    cut = content.index("}", content.index(CAMERAS[0])) + 1
    completion = ms.chat_completion(request, content).body
    # events: the role, the two pieces of content, the finish, [DONE]
    return ms.Reply(
        200, ms.sse_of(completion, cuts=[cut]), kind="text/event-stream", hold=(2, gate)
    )


def _record(events: list[LiveEvent], gate: threading.Event) -> Any:
    def listener(event: LiveEvent) -> None:
        events.append(event)
        gate.set()  # the application has shown something: the server may go on

    return listener


def _texts(events: list[LiveEvent]) -> list[str]:
    return [
        "restart" if isinstance(e, Restart) else compose_sentences(list(e.claims)).answer
        for e in events
    ]


def _claims(execution: QueryExecution) -> list[tuple[str, int, int, str]]:
    rows = ClaimCitation.objects.filter(query=execution).order_by("id")
    return [
        (c.reply_sentence, c.source_start, c.source_end, c.quoted_source.quoted_as) for c in rows
    ]


def test_sentences_are_reported_as_they_verify_and_the_answer_is_the_unstreamed_one(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    gate, events = threading.Event(), list[LiveEvent]()
    openai_server.script(lambda r: _held(_two_claims(r), r, gate))
    app = llm_library.app("openai")
    with live_listen(_record(events, gate)):
        execution = query_execute(app=app, question=QUESTION)

    assert execution.status == "completed", execution.error_message
    # the first sentence was shown before the server had sent the second
    assert openai_server.released == [True]
    assert [type(e) for e in events] == [LiveSentence, LiveSentence]
    assert _texts(events) == [f"{CAMERAS[0]} [1]", f"{CONTRACTS[0]} [1]"]
    shown = [claim for e in events if isinstance(e, LiveSentence) for claim in e.claims]
    assert compose_sentences(shown).answer == execution.answer
    call = ModelCall.objects.get(query=execution)
    assert call.wire["streamed"] is True

    # the same reply read whole (a server that ignores stream): the same answer
    openai_server.streams = False
    openai_server.script(lambda r: ms.chat_completion(r, _two_claims(r)))
    whole = query_execute(app=app, question=QUESTION)
    assert whole.answer == execution.answer
    assert _claims(whole) == _claims(execution)
    assert ModelCall.objects.get(query=whole).wire["streamed"] is False


def test_a_reply_that_fails_a_check_is_retried_and_its_unverified_sentence_never_shown(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    gate, events = threading.Event(), list[LiveEvent]()
    invented = "Visitors may watch the recordings"
    openai_server.script(
        lambda r: _held(_two_claims(r, second_quote=invented), r, gate),
        lambda r: ms.chat_completion(r, _two_claims(r)),
    )
    with live_listen(_record(events, gate)):
        execution = query_execute(app=llm_library.app("openai"), question=QUESTION)

    assert execution.status == "completed", execution.error_message
    assert _texts(events) == [
        f"{CAMERAS[0]} [1]",
        "restart",
        f"{CAMERAS[0]} [1]",
        f"{CONTRACTS[0]} [1]",  # each sentence composed alone here
    ]
    assert [e.attempt for e in events if isinstance(e, LiveSentence)] == [1, 2, 2]
    shown = [claim for e in events[2:] if isinstance(e, LiveSentence) for claim in e.claims]
    assert compose_sentences(shown).answer == execution.answer


def test_a_stream_that_breaks_off_falls_back_or_fails_clearly(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    def broken(request: dict[str, Any]) -> ms.Reply:
        content = _two_claims(request)
        cut = content.index("}", content.index(CAMERAS[0])) + 1
        whole = ms.sse_of(ms.chat_completion(request, content).body, cuts=[cut])
        kept = whole[: whole.index(b"\n\n", whole.index(CAMERAS[0].encode())) + 2]
        return ms.Reply(200, kept, kind="text/event-stream", announced=len(whole))

    openai_server.script(broken)
    events: list[LiveEvent] = []
    app = llm_library.app("openai", model_fallback="extractive")
    with live_listen(events.append):
        execution = query_execute(app=app, question=QUESTION)
    assert execution.status == "completed"
    assert (execution.generator, execution.fallback_reason) == ("extractive", "model_bad_response")
    assert _texts(events) == [f"{CAMERAS[0]} [1]", "restart"]
    assert ModelCall.objects.get(query=execution).error.startswith("model_bad_response:")

    app.model_fallback = "fail"
    app.save()
    with pytest.raises(ModelError) as failed:
        query_execute(app=app, question=QUESTION)
    assert (failed.value.code, failed.value.status) == ("model_bad_response", 502)


def _claude(request: dict[str, Any]) -> ms.Reply:
    return ms.claude(("Based on the documents: ", None), CAMERAS, (" ", None), CONTRACTS)(request)


def test_anthropic_messages_stream_reports_each_cited_block_and_keeps_cited_text(
    llm_library: llm_support.Library, anthropic_server: ms.Server
) -> None:
    gate, events = threading.Event(), list[LiveEvent]()

    def held(request: dict[str, Any]) -> ms.Reply:
        stream = ms.message_events(_claude(request).body)
        # after the first cited block's content_block_stop, wait for the application
        first_stop = next(
            i for i, e in enumerate(stream) if e["type"] == "content_block_stop" and e["index"] == 1
        )
        return ms.Reply(
            200, ms.sse_events(stream), kind="text/event-stream", hold=(first_stop + 1, gate)
        )

    anthropic_server.script(held)
    app = llm_library.app("anthropic", model="claude-test")
    with live_listen(_record(events, gate)):
        execution = query_execute(app=app, question=QUESTION)

    assert execution.status == "completed", execution.error_message
    assert anthropic_server.released == [True]
    assert anthropic_server.requests[0]["stream"] is True
    assert _texts(events) == [f"{CAMERAS[0]} [1]", f"{CONTRACTS[0]} [1]"]
    call = ModelCall.objects.get(query=execution)
    received = ms.message_received(call.raw_response)
    assert [e["type"] for e in received][:2] == ["message_start", "ping"]
    assert received[-1]["type"] == "message_stop"
    assert (call.input_tokens, call.output_tokens) == (1540, 96)
    cited = [
        e["delta"]["citation"]["cited_text"]
        for e in received
        if e.get("delta", {}).get("type") == "citations_delta"
    ]
    checks = list(execution.claim_checks.order_by("sentence", "id"))
    assert [c.quote for c in checks if c.citation_type != "none"] == cited  # as streamed

    anthropic_server.streams = False  # the same reply as one body
    anthropic_server.script(_claude)
    whole = query_execute(app=app, question=QUESTION)
    assert whole.answer == execution.answer
    assert _claims(whole) == _claims(execution)


def test_anthropic_stream_error_event_is_a_clear_failure(
    llm_library: llm_support.Library, anthropic_server: ms.Server
) -> None:
    def overloaded(request: dict[str, Any]) -> ms.Reply:
        stream = ms.message_events(_claude(request).body)[:6]
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return ms.Reply(200, ms.sse_events([*stream, error]), kind="text/event-stream")

    anthropic_server.script(overloaded)
    app = llm_library.app("anthropic", model="claude-test", model_fallback="fail")
    with pytest.raises(ModelError) as failed:
        query_execute(app=app, question=QUESTION)
    assert failed.value.code == "model_unavailable" and "overloaded_error" in failed.value.message


def _events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for block in body.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_the_page_streams_verified_sentences_as_they_arrive_and_resets_on_a_retry(
    llm_library: llm_support.Library, openai_server: ms.Server
) -> None:
    user = get_user_model().objects.create_user("olivia", password="pw-123-456")
    OrganizationMember.objects.create(
        organization=llm_library.organization, user=user, role="viewer"
    )
    client = Client()
    client.force_login(user)
    invented = "Visitors may watch the recordings"
    openai_server.script(
        lambda r: ms.chat_completion(r, _two_claims(r, second_quote=invented)),
        lambda r: ms.chat_completion(r, _two_claims(r)),
    )
    app = llm_library.app("openai")
    response = client.post("/ask/stream/", {"app": str(app.pk), "question": QUESTION})
    events = _events(streamed(response))

    names = [name for name, _ in events]
    assert names == ["status", "status", "sentence", "reset", "sentence", "sentence", "done"]
    sentences = [data["html"] for name, data in events if name == "sentence"]
    assert CAMERAS[0] in sentences[0] and CAMERAS[0] in sentences[1]
    assert f"{CONTRACTS[0]} [" in sentences[2]
    assert not any(INVENTED[:20] in data.get("html", "") for _, data in events)
    execution = QueryExecution.objects.get(pk=events[-1][1]["query_id"])
    assert execution.answer.startswith(f"{CAMERAS[0]} [1] {CONTRACTS[0]} [")
