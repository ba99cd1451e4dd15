"""The one exception of the conversational API's domain code; views turn it into the
OpenAI error shape (``documents.api.errors.ApiError``)."""

from __future__ import annotations


class ThreadRejected(Exception):
    """A request refused with a stable ``code``, the offending ``param`` and an HTTP status."""

    def __init__(
        self, message: str, *, code: str, param: str | None = None, status: int = 400
    ) -> None:
        super().__init__(message)
        self.message, self.code, self.param, self.status = message, code, param, status
