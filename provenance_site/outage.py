"""A database outage in a view answers 503 with ``Retry-After`` (the error shape on
API paths, a page elsewhere) instead of the 500 of a bug, on every server and with
``DEBUG`` on too (whose debug page would otherwise take the place of ``handler500``).

REST views answer it themselves (``core.errors.json_exception_handler``); this
covers the web pages and the admin. Errors raised outside a view reach
``error_pages.server_error``, which tells an outage apart the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from core.errors import database_outage
from provenance_site.error_pages import outage_response


class DatabaseOutageMiddleware:
    """``process_exception``: 503 for an outage, any other error left to Django."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return outage_response(request, exception) if database_outage(exception) else None
