"""Local HTTP servers that speak the OpenAI Chat Completions and Anthropic Messages
wire formats (request checks, response bodies, error bodies and headers as the
providers document them), so the real ``openai`` and ``anthropic`` SDKs run inside
the application against them. What the "model" replies is scripted by the test:
a function of the request body, or an error, a delay or an empty reply."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-provenance"


@dataclass
class Reply:
    status: int
    body: Any  # a dict (sent as JSON) or bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # bytes sent as this content type (an event stream written by the test)
    kind: str = ""
    # the length the headers announce, when the body sent is cut short of it (a
    # stream that breaks off mid-way)
    announced: int | None = None
    # (n, gate): an event stream stops after its first n events until ``gate`` is set
    # (or 10 s pass); the server records whether it was set, so a test can tell that
    # the application acted on those events before the rest of the reply existed
    hold: tuple[int, threading.Event] | None = None


Script = Callable[[dict[str, Any]], Reply]


@dataclass
class Server:
    url: str
    requests: list[dict[str, Any]]
    headers: list[dict[str, str]]
    replies: list[Script]
    # a request that asks for ``stream`` gets its completion as an event stream of
    # chunks, as OpenAI sends it; False: the server ignores ``stream`` (some do)
    streams: bool = True
    # for each held reply, whether its gate was set (not the 10 s that pass otherwise)
    released: list[bool] = field(default_factory=list)

    def script(self, *replies: Script) -> None:
        """Replies in order; the last one repeats."""
        self.replies[:] = list(replies)


def _handler(
    server: Server, path: str, authorised: Callable[[dict[str, str]], Reply | None]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # http.server's name
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.requests.append(body)
            server.headers.append(headers)
            if self.path != path:
                reply = Reply(404, {"error": {"message": f"no route {self.path}"}})
            else:
                authorised_reply = authorised(headers)
                if authorised_reply is None:
                    replies = server.replies
                    reply = (replies[0] if len(replies) == 1 else replies.pop(0))(body)
                else:
                    reply = authorised_reply
            time.sleep(reply.delay)
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            kind = reply.kind or "application/json"
            if body.get("stream") and server.streams and _completion(reply):
                data, kind = sse_of(reply.body), "text/event-stream"
            if body.get("stream") and server.streams and _message(reply):
                data, kind = message_sse_of(reply.body), "text/event-stream"
            try:
                self.send_response(reply.status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(reply.announced or len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                pieces = _pieces(data) if kind == "text/event-stream" else [data]
                for number, piece in enumerate(pieces):
                    if reply.hold is not None and number == reply.hold[0]:
                        server.released.append(reply.hold[1].wait(10))
                    self.wfile.write(piece)
                    self.wfile.flush()  # each event as it is "generated"
            except (BrokenPipeError, ConnectionResetError):  # the client timed out
                pass

    return Handler


def _completion(reply: Reply) -> bool:
    body = reply.body
    return (
        reply.status == 200 and isinstance(body, dict) and body.get("object") == "chat.completion"
    )


def _pieces(data: bytes) -> list[bytes]:
    """An event stream cut after each event's blank line."""
    parts = data.split(b"\n\n")
    return [part + b"\n\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _message(reply: Reply) -> bool:
    body = reply.body
    return reply.status == 200 and isinstance(body, dict) and body.get("type") == "message"


def sse_of(completion: dict[str, Any], pieces: int = 3, cuts: list[int] | None = None) -> bytes:
    """A completion as the event stream of ``chat.completion.chunk`` objects OpenAI sends
    for ``stream: true``: the content in pieces (or cut at ``cuts``), the finish reason,
    then ``[DONE]``."""
    choice = completion["choices"][0]
    content = choice["message"].get("content") or ""
    size = max(1, -(-len(content) // pieces))
    bounds = [0, *(cuts or range(size, len(content), size)), len(content)]
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    for start, end in zip(bounds, bounds[1:], strict=False):
        delta = {"content": content[start:end]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta}]})
    if choice["message"].get("refusal"):
        delta = {"refusal": choice["message"]["refusal"]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta}]})
    final = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    chunks.append({**base, "choices": [final], "usage": completion.get("usage")})
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def completion_received(raw: str) -> dict[str, Any]:
    """A stored reply (one JSON body, or the event stream of its chunks) as the
    completion it carried: ``id``, ``model`` and the message's content."""
    if not raw.lstrip().startswith("data:"):
        return dict(json.loads(raw))
    chunks = [
        json.loads(line[5:])
        for line in raw.splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]
    content = "".join(
        (choice.get("delta") or {}).get("content") or ""
        for chunk in chunks
        for choice in chunk.get("choices") or []
    )
    first = chunks[0]
    return {
        "id": first["id"],
        "model": first["model"],
        "choices": [{"message": {"role": "assistant", "content": content}}],
    }


@contextmanager
def _serve(path: str, authorised: Callable[[dict[str, str]], Reply | None]) -> Iterator[Server]:
    server = Server("", [], [], [])
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server, path, authorised))
    httpd.daemon_threads = True
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()


# --- OpenAI -----------------------------------------------------------------------


def openai_error(status: int, message: str, type_: str, code: str | None = None) -> Reply:
    """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return Reply(status, body, {"x-request-id": f"req_{uuid.uuid4().hex}"})


def _openai_auth(headers: dict[str, str]) -> Reply | None:
    if headers.get("authorization") != f"Bearer {KEY}":
        return openai_error(
            401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
        )
    return None


@contextmanager
def openai_server() -> Iterator[Server]:
    """Serves ``POST /v1/chat/completions``; point ``OPENAI_BASE_URL`` at ``url + "/v1"``."""
    with _serve("/v1/chat/completions", _openai_auth) as server:
        yield server


def chat_completion(
    request: dict[str, Any],
    content: str | None,
    *,
    refusal: str | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int] = (812, 64),
) -> Reply:
    """A ``chat.completion`` object as OpenAI returns it."""
    body = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"{request['model']}-2026-01-01",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": refusal,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_provenance",
    }
    return Reply(200, body, {"x-request-id": f"req_{uuid.uuid4().hex}"})


_DELIMITED = re.compile(r"(<<<SNIPPETS [0-9a-f]+>>>)\n(.*)\n(<<<END SNIPPETS [0-9a-f]+>>>)", re.S)


def snippets_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The snippets the application put between its delimiters (the model's view)."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    found = _DELIMITED.search(user)
    assert found, user
    return [json.loads(line) for line in found.group(2).splitlines()]


def citation_for(snippets: list[dict[str, Any]], quote: str) -> dict[str, Any]:
    """The contract's citation of the snippet that holds ``quote``, fields copied."""
    snippet = next(s for s in snippets if quote in s["text"])
    fields = ("snippet_id", "section_id", "source_url", "offsets", "tokens")
    return {**{name: snippet[name] for name in fields}, "quote": quote}


def contract(
    citations: list[dict[str, Any]], sentences: list[tuple[str, list[int]]], **extra: Any
) -> str:
    body = {
        "citations": citations,
        "answer": [{"text": text, "citations": refs} for text, refs in sentences],
        "ΔS": 0.31,
        "λ": "convergent",
        "error": None,
        "fix": None,
        **extra,
    }
    return json.dumps(body, ensure_ascii=False)


def answering(*claims: tuple[str, str]) -> Script:
    """A model that answers each ``(sentence, quote)`` citing the snippet holding the quote."""

    def reply(request: dict[str, Any]) -> Reply:
        snippets = snippets_of(request)
        citations = [citation_for(snippets, quote) for _, quote in claims]
        sentences = [(text, [i]) for i, (text, _) in enumerate(claims)]
        return chat_completion(request, contract(citations, sentences))

    return reply


_FLAT_SNIPPET = re.compile(
    r"^Snippet (\d+)(?: \(.*?\))?:\n(.*?)(?=\n\nSnippet \d+|\Z)", re.S | re.M
)


def flat_snippets_of(request: dict[str, Any]) -> dict[int, str]:
    """The numbered snippets of a flat-contract request (the model's view)."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    found = _DELIMITED.search(user)
    assert found, user
    return {int(m.group(1)): m.group(2) for m in _FLAT_SNIPPET.finditer(found.group(2))}


def is_flat(request: dict[str, Any]) -> bool:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return "\nSnippet 1" in user


def flat_answering(*claims: tuple[str, str], quoted: Callable[[str], str] = str) -> Script:
    """A model keeping the flat contract: each ``(sentence, quote)`` names the snippet
    holding the quote; ``quoted`` changes the quote as a model might copy it."""

    def reply(request: dict[str, Any]) -> Reply:
        snippets = flat_snippets_of(request)
        items = []
        for text, quote in claims:
            number = next(n for n, body in snippets.items() if quote in body)
            items.append({"snippet": number, "quote": quoted(quote), "text": text})
        return chat_completion(request, json.dumps({"answer": items}, ensure_ascii=False))

    return reply


# --- Anthropic --------------------------------------------------------------------


def anthropic_error(status: int, type_: str, message: str) -> Reply:
    """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``."""
    request_id = f"req_{uuid.uuid4().hex[:24]}"
    body = {"type": "error", "error": {"type": type_, "message": message}, "request_id": request_id}
    return Reply(status, body, {"request-id": request_id})


def _anthropic_auth(headers: dict[str, str]) -> Reply | None:
    # the SDK sends the key as ``x-api-key`` or, in newer versions, as a bearer token
    if KEY not in (headers.get("x-api-key"), headers.get("authorization", "")[7:]):
        return anthropic_error(401, "authentication_error", "invalid x-api-key")
    if not headers.get("anthropic-version"):
        return anthropic_error(400, "invalid_request_error", "anthropic-version header is required")
    return None


@contextmanager
def anthropic_server() -> Iterator[Server]:
    """Serves ``POST /v1/messages``; point ``ANTHROPIC_BASE_URL`` at ``url``."""
    with _serve("/v1/messages", _anthropic_auth) as server:
        yield server


def message(
    request: dict[str, Any],
    content: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: tuple[int, int] = (1540, 96),
) -> Reply:
    """A ``message`` object as the Messages API returns it."""
    body = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        },
    }
    return Reply(200, body, {"request-id": f"req_{uuid.uuid4().hex[:24]}"})


def documents_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The document blocks of the first user turn, in order (their index is
    ``document_index``)."""
    turn = request["messages"][0]["content"]
    return [block for block in turn if block["type"] == "document"]


def cite(documents: list[dict[str, Any]], quote: str) -> dict[str, Any]:
    """The citation the API gives for ``quote``: ``char_location`` in a plain text
    document, ``content_block_location`` (the blocks holding it) in a content one."""
    for index, document in enumerate(documents):
        source, title = document["source"], document.get("title")
        if source["type"] == "text" and quote in source["data"]:
            start = source["data"].index(quote)
            return {
                "type": "char_location",
                "cited_text": quote,
                "document_index": index,
                "document_title": title,
                "start_char_index": start,
                "end_char_index": start + len(quote),
                "file_id": None,
            }
        if source["type"] == "content":
            blocks = [b["text"] for b in source["content"]]
            for first, text in enumerate(blocks):
                if quote in text:
                    return {
                        "type": "content_block_location",
                        "cited_text": text,
                        "document_index": index,
                        "document_title": title,
                        "start_block_index": first,
                        "end_block_index": first + 1,
                        "file_id": None,
                    }
    raise AssertionError(f"no document holds {quote!r}")


def claude(*parts: tuple[str, str | None]) -> Script:
    """A model replying with text blocks, each ``(text, quote)`` cited where it holds a quote."""

    def reply(request: dict[str, Any]) -> Reply:
        documents = documents_of(request)
        content = []
        for text, quote in parts:
            block: dict[str, Any] = {"type": "text", "text": text}
            if quote is not None:
                block["citations"] = [cite(documents, quote)]
            content.append(block)
        return message(request, content)

    return reply


def message_events(message: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    """A ``message`` as the events the Messages API streams for ``stream: true``:
    ``message_start`` (no content, the input usage), ``ping``, per content block
    ``content_block_start`` (empty text, empty citations), its text in ``text_delta``
    pieces and each citation in a ``citations_delta``, ``content_block_stop``; then
    ``message_delta`` (stop reason, output usage) and ``message_stop``."""
    usage = dict(message["usage"])
    started = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**started, "usage": {**usage, "output_tokens": 1}}},
        {"type": "ping"},
    ]
    for index, block in enumerate(message["content"]):
        opened = {"type": "text", "text": "", "citations": []} if block["type"] == "text" else block
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        text = block.get("text") or ""
        size = max(1, -(-len(text) // pieces))
        for start in range(0, len(text), size):
            delta = {"type": "text_delta", "text": text[start : start + size]}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        for citation in block.get("citations") or []:
            delta = {"type": "citations_delta", "citation": citation}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    events.append(
        {"type": "message_delta", "delta": stop, "usage": {"output_tokens": usage["output_tokens"]}}
    )
    events.append({"type": "message_stop"})
    return events


def sse_events(events: list[dict[str, Any]]) -> bytes:
    """Events as the Messages API writes them: ``event: <type>`` and ``data: <json>``."""
    return "".join(
        f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
        for event in events
    ).encode()


def message_sse_of(message: dict[str, Any]) -> bytes:
    return sse_events(message_events(message))


def message_received(raw: str) -> list[dict[str, Any]]:
    """A stored streamed reply as the events it carried."""
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]


def broken_stream(events: list[dict[str, Any]], keep: int) -> Reply:
    """The first ``keep`` events of a stream, then the connection closes though the
    headers announced more (a server that died mid-reply)."""
    whole = sse_events(events)
    return Reply(200, sse_events(events[:keep]), kind="text/event-stream", announced=len(whole))
