"""Reading responses of the test clients."""

from __future__ import annotations

from django.http import HttpResponseBase, StreamingHttpResponse


def streamed(response: HttpResponseBase) -> bytes:
    """The whole body of a streaming response: a download, an export, server-sent events."""
    assert isinstance(response, StreamingHttpResponse), type(response)
    return response.getvalue()
