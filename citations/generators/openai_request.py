"""One Chat Completions request, streamed where the server streams, under three
time limits: to connect, to the first token, and for the whole reply.

A slow local model (a 0.5B model on two cores reads a prompt of five chunks in
30-60 s) is not a failure, so the limits are set per app or in the environment
(docs/generators.md). The reply is read as the server sent it, whether an event
stream or one JSON body (a server may ignore ``stream``), and kept whole as evidence.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from citations.generators import ModelError
from citations.generators.llm import Timeouts


@dataclass(frozen=True)
class Completion:
    """What a reply said, and its HTTP body as received."""

    raw_text: str
    content: str
    response_id: str = ""
    response_model: str = ""
    finish_reason: str = ""
    refusal: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    streamed: bool = False
    first_token_ms: float | None = None


class ReplyTimeout(Exception):
    """The reply did not start, or did not end, in time (``which``: first_token, total)."""

    def __init__(self, which: str, seconds: float) -> None:
        super().__init__(f"{which} {seconds:g} s")
        self.which, self.seconds = which, seconds


class BadBody(Exception):
    """A 200 whose body is neither a completion nor an event stream of chunks."""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def completion_of(raw_text: str) -> Completion:
    """A ``chat.completion`` body read."""
    try:
        body = json.loads(raw_text)
    except ValueError as exc:
        raise BadBody(f"the body is not JSON: {raw_text[:120]!r}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise BadBody(f"the body is not a chat completion: {raw_text[:120]!r}")
    choice = body["choices"][0] if body["choices"] else {}
    message = choice.get("message") if isinstance(choice, dict) else None
    message = message if isinstance(message, dict) else {}
    usage: dict[str, Any] = body["usage"] if isinstance(body.get("usage"), dict) else {}
    return Completion(
        raw_text=raw_text,
        content=str(message.get("content") or ""),
        response_id=str(body.get("id") or ""),
        response_model=str(body.get("model") or ""),
        finish_reason=str(choice.get("finish_reason") or "") if isinstance(choice, dict) else "",
        refusal=str(message.get("refusal") or ""),
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
    )


@dataclass
class _Chunks:
    """A stream's chunks gathered into one completion."""

    content: str = ""
    refusal: str = ""
    response_id: str = ""
    response_model: str = ""
    finish_reason: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    now: float = 0.0
    first_token_at: float | None = None

    def add(self, chunk: dict[str, Any]) -> bool:
        """Adds a chunk; True when it carried text of the reply."""
        if "error" in chunk:
            error = chunk["error"]
            said = error.get("message") if isinstance(error, dict) else error
            raise BadBody(f"the stream ended with an error: {str(said)[:300]}")
        self.response_id = self.response_id or str(chunk.get("id") or "")
        self.response_model = self.response_model or str(chunk.get("model") or "")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.input_tokens = _int(usage.get("prompt_tokens"))
            self.output_tokens = _int(usage.get("completion_tokens"))
        text = False
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta: dict[str, Any] = choice["delta"] if isinstance(choice.get("delta"), dict) else {}
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.content += piece
                text = True
            if isinstance(delta.get("refusal"), str):
                self.refusal += delta["refusal"]
            self.finish_reason = str(choice.get("finish_reason") or self.finish_reason)
        return text


def _event(line: str, chunks: _Chunks) -> bool:
    """Reads one line of an event stream into ``chunks``; True at its end."""
    if not line.startswith("data:"):
        return False  # comments (": ping"), event names and blank separators
    data = line[5:].strip()
    if data == "[DONE]":
        return True
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise BadBody(f"a stream event is not JSON: {data[:120]!r}") from exc
    if isinstance(chunk, dict) and chunks.add(chunk) and chunks.first_token_at is None:
        chunks.first_token_at = chunks.now
    return False


def stream_read(
    lines: Iterator[str],
    *,
    timeouts: Timeouts,
    started: float,
    clock: Callable[[], float],
    on_text: Callable[[str], None] | None = None,
) -> Completion:
    """An event stream of ``chat.completion.chunk`` objects, or one JSON body sent
    instead, read under the first-token and total limits; ``on_text`` is given the
    reply's text so far each time it grows (to show verified sentences early)."""
    received: list[str] = []
    chunks = _Chunks()
    try:
        for line in lines:
            received.append(line)
            chunks.now = clock()
            if chunks.now - started > timeouts.total:
                raise ReplyTimeout("total", timeouts.total)
            if chunks.first_token_at is None and chunks.now - started > timeouts.first_token:
                raise ReplyTimeout("first_token", timeouts.first_token)
            before = len(chunks.content)
            if _event(line, chunks):
                break
            if on_text is not None and len(chunks.content) > before:
                on_text(chunks.content)
    except httpx2.TimeoutException as exc:
        which = "first_token" if chunks.first_token_at is None else "total"
        raise ReplyTimeout(which, getattr(timeouts, which)) from exc
    except httpx2.HTTPError as exc:
        raise BadBody(f"the stream broke off: {exc}") from exc
    raw_text = "\n".join(received)
    if not any(line.startswith("data:") for line in received):
        return completion_of(raw_text)  # a server that ignored ``stream``: one body
    first = chunks.first_token_at
    return Completion(
        raw_text=raw_text,
        content=chunks.content,
        response_id=chunks.response_id,
        response_model=chunks.response_model,
        finish_reason=chunks.finish_reason,
        refusal=chunks.refusal,
        input_tokens=chunks.input_tokens,
        output_tokens=chunks.output_tokens,
        streamed=True,
        first_token_ms=(first - started) * 1000 if first is not None else None,
    )


def completion_request(
    client: openai.OpenAI,
    request: dict[str, Any],
    timeouts: Timeouts,
    clock: Callable[[], float] = time.monotonic,
    on_text: Callable[[str], None] | None = None,
) -> Completion:
    """Sends ``request`` (streamed when it says ``stream``; ``on_text`` sees the reply
    grow); the SDK's errors pass up."""
    create = client.chat.completions
    started = clock()
    if request.get("stream"):
        with create.with_streaming_response.create(
            **request, timeout=timeouts.httpx_timeout(streamed=True)
        ) as response:
            return stream_read(
                response.iter_lines(),
                timeouts=timeouts,
                started=started,
                clock=clock,
                on_text=on_text,
            )
    raw = create.with_raw_response.create(**request, timeout=timeouts.httpx_timeout(streamed=False))
    return completion_of(raw.http_response.text)


def timeout_error(exc: ReplyTimeout, at: str) -> ModelError:
    """A limit passed while the reply streamed, naming the limit and its setting (the
    SDK's own timeouts, before any reply, are :func:`citations.generators.llm.model_error`'s)."""
    return ModelError(
        f"{at} did not answer within {exc.seconds:g} s ({exc.which.replace('_', ' ')} limit; "
        "raise the app's model timeouts or PROVENANCE_LLM_*_SECONDS for a slow model)",
        code="model_timeout",
        status=504,
    )
