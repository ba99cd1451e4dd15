"""Server-sent events, written one way for every stream the site serves: the
answer page's, a thread run's (Assistants events) and a response's (Responses
events)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.http import StreamingHttpResponse


def sse(event: str, data: object) -> bytes:
    """One event; ``data`` is JSON on a single line (a string is sent as it is)."""
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"event: {event}\ndata: {body}\n\n".encode()


def event_stream(events: Iterator[bytes]) -> StreamingHttpResponse:
    """The response that carries ``events``: never cached, never held by a proxy."""
    # the format is UTF-8 by definition: no charset parameter
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy in front must pass each event on at once
    return response
