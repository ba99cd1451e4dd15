"""The one exception of the conversational API's domain code; the REST exception
handler turns it into the OpenAI error shape (``core.errors``)."""

from __future__ import annotations

from core.exceptions import DomainRejected


class ThreadRejected(DomainRejected):
    """A request refused with a stable ``code``, the offending ``param`` and an HTTP status."""
