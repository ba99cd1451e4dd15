"""The one base of every refusal the domain code makes.

Services raise a subclass with a stable ``code``, a message for people, the HTTP
``status`` an API caller gets and the offending ``param``; they know nothing of
HTTP beyond that number. The REST exception handler (``core.errors``) turns any of
them into the error shape, so views need no try/except to translate them; web
pages, commands and tasks catch them and say ``message`` their own way.
"""

from __future__ import annotations

from typing import ClassVar


class DomainRejected(Exception):
    """A request refused: ``code`` is stable, ``message`` is for people."""

    # the request field a refusal of this kind names when it names none itself
    default_param: ClassVar[str | None] = None

    def __init__(
        self, message: str, *, code: str, status: int = 400, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.message, self.code, self.status = message, code, status
        self.param = param if param is not None else self.default_param
