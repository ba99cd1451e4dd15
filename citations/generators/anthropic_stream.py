"""A Messages API reply read as its event stream, under the first-token and total
limits, gathered into the ``message`` the API would have returned whole.

The stream is ``message_start``, then per content block ``content_block_start``,
its ``content_block_delta`` events (``text_delta`` pieces of text, ``citations_delta``
citations, each with its ``cited_text`` as sent: it is matched exactly) and
``content_block_stop``, then ``message_delta`` (stop reason, usage) and
``message_stop``; ``ping`` keeps it alive and ``error`` ends it. Each block is handed
to ``on_block`` as it completes, so a listener sees verified sentences early; the
body is kept whole as the call's evidence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2

from citations.generators import ModelError
from citations.generators.llm import Timeouts
from citations.generators.openai_request import BadBody, ReplyTimeout


@dataclass
class _Gathered:
    message: dict[str, Any] | None = None
    first_token_at: float | None = None
    ended: bool = False


def _data(line: str) -> dict[str, Any] | None:
    if not line.startswith("data:"):
        return None  # "event:" names (the data says its type too), comments, separators
    try:
        data = json.loads(line[5:])
    except ValueError as exc:
        raise BadBody(f"a stream event is not JSON: {line[5:125]!r}") from exc
    if not isinstance(data, dict):
        raise BadBody(f"a stream event is not an object: {line[5:125]!r}")
    return data


def _block(gathered: _Gathered, data: dict[str, Any]) -> dict[str, Any]:
    content = gathered.message["content"] if gathered.message else None
    index = data.get("index")
    if not isinstance(content, list) or not isinstance(index, int) or not 0 <= index < len(content):
        raise BadBody(f"a {data.get('type')} event names no open content block")
    block: dict[str, Any] = content[index]
    return block


def _delta(block: dict[str, Any], delta: Any) -> bool:
    """Adds a delta to its block; True when it carried text."""
    kind = delta.get("type") if isinstance(delta, dict) else None
    if kind == "text_delta" and isinstance(delta.get("text"), str):
        block["text"] = str(block.get("text") or "") + delta["text"]
        return bool(delta["text"])
    if kind == "citations_delta" and isinstance(delta.get("citation"), dict):
        block["citations"] = [*(block.get("citations") or []), delta["citation"]]
    return False  # thinking, signatures, tool input: not part of a cited answer


def _event(data: dict[str, Any], gathered: _Gathered, on_block: Callable[[Any], None]) -> bool:
    """One event into ``gathered``; True when it carried text of the reply."""
    kind = data.get("type")
    if kind == "error":
        error: dict[str, Any] = data["error"] if isinstance(data.get("error"), dict) else {}
        raise ModelError(
            f"anthropic ended the stream with an error: {error.get('type')}: "
            f"{str(error.get('message'))[:300]}",
            code="model_unavailable",
        )
    if kind == "message_start" and isinstance(data.get("message"), dict):
        gathered.message = {**data["message"], "content": []}
        return False
    if gathered.message is None:
        if kind == "ping":
            return False
        raise BadBody(f"the stream did not start with message_start ({kind!r})")
    if kind == "content_block_start" and isinstance(data.get("content_block"), dict):
        gathered.message["content"].append(dict(data["content_block"]))
    elif kind == "content_block_delta":
        return _delta(_block(gathered, data), data.get("delta"))
    elif kind == "content_block_stop":
        on_block(_block(gathered, data))
    elif kind == "message_delta":
        delta: dict[str, Any] = data["delta"] if isinstance(data.get("delta"), dict) else {}
        gathered.message.update({k: v for k, v in delta.items() if k.startswith("stop_")})
        if isinstance(data.get("usage"), dict):
            gathered.message["usage"] = {**gathered.message.get("usage", {}), **data["usage"]}
    elif kind == "message_stop":
        gathered.ended = True
    return False


def stream_message(
    lines: Iterator[str],
    *,
    timeouts: Timeouts,
    started: float,
    clock: Callable[[], float],
    on_block: Callable[[Any], None],
) -> tuple[anthropic.types.Message, str, float | None]:
    """The message an event stream carries, its body, and when its first text came (ms)."""
    received: list[str] = []
    gathered = _Gathered()
    try:
        for line in lines:
            received.append(line)
            now = clock()
            if now - started > timeouts.total:
                raise ReplyTimeout("total", timeouts.total)
            if gathered.first_token_at is None and now - started > timeouts.first_token:
                raise ReplyTimeout("first_token", timeouts.first_token)
            data = _data(line)
            texted = data is not None and _event(data, gathered, on_block)
            if texted and gathered.first_token_at is None:
                gathered.first_token_at = now
            if gathered.ended:
                break
    except httpx2.TimeoutException as exc:
        which = "first_token" if gathered.first_token_at is None else "total"
        raise ReplyTimeout(which, getattr(timeouts, which)) from exc
    except httpx2.HTTPError as exc:
        raise BadBody(f"the stream broke off: {exc}") from exc
    if not any(line.startswith("data:") for line in received):
        return _whole(received), "\n".join(received), None  # a server that ignored stream
    if gathered.message is None or not gathered.ended:
        raise BadBody("the stream ended before message_stop")
    try:
        message = anthropic.types.Message.model_validate(gathered.message)
    except ValueError as exc:
        raise BadBody(f"the streamed message is not a message: {exc}") from exc
    first = gathered.first_token_at
    return message, "\n".join(received), (first - started) * 1000 if first is not None else None


def _whole(received: list[str]) -> anthropic.types.Message:
    """A reply sent as one ``message`` body instead of a stream."""
    try:
        return anthropic.types.Message.model_validate_json("\n".join(received))
    except ValueError as exc:
        raise BadBody(f"the body is neither a message nor its event stream: {exc}") from exc


def block_of(block: dict[str, Any]) -> Any:
    """A completed content block as the SDK's type (a text block's citations typed)."""
    if block.get("type") != "text":
        return None
    try:
        return anthropic.types.TextBlock.model_validate(block)
    except ValueError:
        return None
