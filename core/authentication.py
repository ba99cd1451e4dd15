"""REST authentication by organization API key.

Accepted headers: ``Authorization: Bearer <key>`` (our own and the OpenAI
client's), ``X-API-Key`` and the source-citation document's
``Wikit-Semantics-API-Key``; an ``X-Wikit-Organization-Id`` or
``X-Organization-Id`` header, when sent, must name the key's organization.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from core.api_keys import api_key_verify
from documents.models import ApiKey

_KEY_HEADERS = ("HTTP_X_API_KEY", "HTTP_WIKIT_SEMANTICS_API_KEY")
_ORG_HEADERS = ("HTTP_X_WIKIT_ORGANIZATION_ID", "HTTP_X_ORGANIZATION_ID")


def _presented_key(request: Request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <api key>'")
        return token.strip()
    for name in _KEY_HEADERS:
        if request.META.get(name):
            return request.META[name].strip()
    return None


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Authenticates a request as its organization's API key (``request.auth``)."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, ApiKey] | None:
        presented = _presented_key(request)
        if presented is None:
            return None
        key = api_key_verify(presented=presented)
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid API key")
        for name in _ORG_HEADERS:
            claimed = request.META.get(name)
            if claimed and claimed.strip() != str(key.organization_id):
                raise exceptions.AuthenticationFailed(
                    "API key does not belong to that organization"
                )
        return AnonymousUser(), key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="provenance"'


def api_key_of(request: HttpRequest | Request) -> ApiKey | None:
    """The API key the request authenticated with, or None (a session, or nobody).

    The one place that reads ``request.auth``: DRF sets it to the key
    :class:`ApiKeyAuthentication` returned, a plain Django request has none.
    """
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiKey) else None
