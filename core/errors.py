"""One JSON error shape for every endpoint, the one OpenAI clients understand:
``{"error": {"message", "type", "param", "code"}}``.

Views raise :class:`ApiError` for what only they know (a malformed body), and let
a service's :class:`~core.exceptions.DomainRejected` through: the handler answers
both in this shape. A database that cannot be reached is an outage, answered 503
with ``Retry-After`` (:func:`database_outage`), as ``/healthz`` says, not a 500."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.db import InterfaceError, OperationalError
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from core.exceptions import DomainRejected

logger = logging.getLogger("provenance.errors")

# seconds a client waits before trying again after a database outage: a restarted
# server (the embedded one's supervisor, a managed database's failover) accepts
# connections again within seconds, and clients that all retry at once slow it
OUTAGE_RETRY_AFTER_SECONDS = 10
OUTAGE_MESSAGE = "the database is unavailable; try again shortly"
OUTAGE_CODE = "database_unavailable"
# SQLSTATEs of a server that will not serve now: class 08 (connection exceptions)
# and these: shutting down (57P01-57P02), starting up (57P03), connections full (53300)
_OUTAGE_STATES = ("57P01", "57P02", "57P03", "53300")

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def error_body(status_code: int, message: str, *, code: str, param: str | None = None) -> dict:
    """The one error shape, for DRF's answers and Django's own error pages alike."""
    error_type = _TYPES.get(status_code, "api_error")
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


class ApiError(exceptions.APIException):
    """A client error with a stable machine-readable ``code``."""

    def __init__(
        self, message: str, *, code: str, status_code: int = 400, param: str | None = None
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.param = param


class ErrorDetailOutput(serializers.Serializer):
    message = serializers.CharField()
    type = serializers.CharField()
    param = serializers.CharField(allow_null=True)
    code = serializers.CharField()


class ErrorOutput(serializers.Serializer):
    error = ErrorDetailOutput()


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """The error answers an operation can give, for its OpenAPI responses: those
    named, the 401 and 403 every authenticated operation can give, the 429 of the
    rate limits and the 503 of a database outage."""
    described = {
        400: "the request is malformed; `error.code` and `error.param` say what",
        401: "no valid API key",
        403: "not a member of an organization, or the caller's role may not do this",
        404: "not found, or another organization's",
        409: "the resource is not in a state that allows this",
        413: "the upload is too large",
        415: "the uploaded file's type, or the request body's media type, is not supported",
        429: "too many requests: wait the `Retry-After` header's seconds",
        503: "the database is unavailable (`database_unavailable`): try again after the "
        "`Retry-After` header's seconds",
    }
    codes = sorted({*statuses, 401, 403, 429, 503})
    return {code: OpenApiResponse(ErrorOutput, description=described[code]) for code in codes}


def _message(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_message(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return " ".join(_message(item) for item in detail)
    return str(detail)


_DJANGO_CODES = {404: "not_found", 403: "permission_denied"}


def database_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached (refused, closed, shutting
    down, full), as opposed to a query that failed (cancelled, deadlocked, invalid),
    which stays a bug's 500. Django's wrapped errors are judged by psycopg's cause."""
    if isinstance(exc, InterfaceError | psycopg.InterfaceError):
        return True  # a connection closed under us, or never opened
    if not isinstance(exc, OperationalError | psycopg.OperationalError):
        return False
    cause = exc if isinstance(exc, psycopg.Error) else exc.__cause__
    state = getattr(cause, "sqlstate", None)
    # no SQLSTATE: libpq's own failure (refused, reset, timed out), no server said it
    return state is None or state.startswith("08") or state in _OUTAGE_STATES


def outage_body() -> dict:
    """The error shape of a database outage; its status is 503."""
    return error_body(503, OUTAGE_MESSAGE, code=OUTAGE_CODE)


def outage_log(exc: BaseException, path: str) -> None:
    """One line per request refused by an outage, with what the driver said."""
    logger.error("database unavailable, answered 503 for %s: %s", path, exc)


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's answer to ``exc`` in the one error shape; a domain refusal
    (:class:`DomainRejected`) answers with its own status, code and param, a
    database outage 503 with ``Retry-After``."""
    if database_outage(exc):
        set_rollback()
        request = context.get("request")
        outage_log(exc, getattr(request, "path", "?"))
        headers = {"Retry-After": str(OUTAGE_RETRY_AFTER_SECONDS)}
        return Response(outage_body(), status=503, headers=headers)
    if isinstance(exc, DomainRejected):
        exc = ApiError(exc.message, code=exc.code, status_code=exc.status, param=exc.param)
    response = exception_handler(exc, context)
    if response is None:
        return None
    param = getattr(exc, "param", None)
    # Django's Http404 and PermissionDenied carry no code: name them as DRF's would
    code = getattr(exc, "default_code", _DJANGO_CODES.get(response.status_code, "error"))
    if isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else code
    if isinstance(exc, exceptions.ValidationError) and isinstance(exc.detail, dict):
        param = next(iter(exc.detail), None)
    if response.status_code == status.HTTP_401_UNAUTHORIZED:
        code = "invalid_api_key" if code == "authentication_failed" else code
    detail = (
        response.data.get("detail", response.data)
        if isinstance(response.data, dict)
        else response.data
    )
    response.data = error_body(response.status_code, _message(detail), code=code, param=param)
    return response
