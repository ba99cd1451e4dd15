"""Django's own error answers (``handler400/403/404/500``, a refused CSRF token):
the JSON error shape on API paths, a plain page elsewhere.

DRF answers errors inside its views itself; these cover everything it never sees:
an unknown URL, a request Django refuses before any view runs (a body past
``DATA_UPLOAD_MAX_MEMORY_SIZE``, too many form fields), and an unexpected
exception (500). The pages read nothing from the database, so a 500 caused by
the database still gets one, and a database outage gets a 503 with ``Retry-After``
(``core.errors.database_outage``): from ``provenance_site.outage`` for a view's
error, from :func:`server_error` for one raised anywhere else.
"""

from __future__ import annotations

import sys

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

from core.errors import (
    OUTAGE_CODE,
    OUTAGE_MESSAGE,
    OUTAGE_RETRY_AFTER_SECONDS,
    database_outage,
    error_body,
    outage_log,
)

API_PREFIXES = ("/v1/", "/semantics/", "/api/")

_TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Page not found",
    413: "Request too large",
    500: "Something went wrong",
    503: "Temporarily unavailable",
}
_EXPLANATIONS = {
    400: "The request could not be understood.",
    403: "You do not have access to this page.",
    404: "There is no page at this address.",
    413: "The request is larger than this server accepts.",
    500: "The server could not complete the request. It has been logged; please try again.",
    503: "The database cannot be reached just now. Please try again in a moment.",
}


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIXES)


def error_response(request: HttpRequest, status: int, message: str, *, code: str) -> HttpResponse:
    """``{"error": …}`` on API paths, else the plain page for ``status``."""
    if is_api_path(request.path):
        return JsonResponse(error_body(status, message, code=code), status=status)
    context = {
        "status": status,
        "title": _TITLES[status],
        "explanation": _EXPLANATIONS[status],
        "csp_nonce": getattr(request, "csp_nonce", ""),
    }
    page = loader.get_template("errors/page.html").render(context)  # no request: no DB
    return HttpResponse(page, status=status)


def _bad_request(exception: Exception | None) -> tuple[int, str, str]:
    """(status, message, code) for what Django refused before any view ran."""
    if isinstance(exception, RequestDataTooBig):
        return 413, "the request body is larger than the server accepts", "request_too_large"
    if isinstance(exception, TooManyFieldsSent):
        return 400, "the request has too many form fields", "too_many_fields"
    if isinstance(exception, TooManyFilesSent):
        return 400, "the request has too many files", "too_many_files"
    return 400, "the request is malformed", "bad_request"


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    status, message, code = _bad_request(exception)
    return error_response(request, status, message, code=code)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(
        request, 403, "you do not have permission to do this", code="permission_denied"
    )


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 404, "no such endpoint or resource", code="not_found")


def outage_response(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """503 with ``Retry-After``: the error shape on API paths, the page elsewhere."""
    outage_log(exception, request.path)
    response = error_response(request, 503, OUTAGE_MESSAGE, code=OUTAGE_CODE)
    response["Retry-After"] = str(OUTAGE_RETRY_AFTER_SECONDS)
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: Django calls it while handling the exception, so an outage
    raised outside a view (a middleware saving the session) is still told apart."""
    exception = sys.exc_info()[1]
    if exception is not None and database_outage(exception):
        return outage_response(request, exception)
    return error_response(request, 500, "internal server error", code="internal_error")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A refused CSRF token (``CSRF_FAILURE_VIEW``); the reason stays in the log."""
    return error_response(
        request, 403, "the form's security token is missing or stale", code="csrf_failed"
    )
