"""Rate limits of the REST API: one budget per API key (or signed-in user), one per
address for anonymous callers (public apps), counted in the shared cache so every
web worker process sees the same counts.

Past its budget a caller gets 429 in the error shape with ``Retry-After``
(``core/errors.py``). Rates are ``PROVENANCE_THROTTLE_KEY`` and
``PROVENANCE_THROTTLE_ANON`` ("120/min"; empty or "off" for none); they are read
on each request, so a changed setting applies at once.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.management import call_command
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from core.authentication import api_key_of


class _SettingRateThrottle(SimpleRateThrottle):
    """A throttle whose rate is a Django setting (DRF reads its rates once, at import)."""

    setting = ""

    def __init__(self) -> None:
        self.cache = caches[settings.PROVENANCE_THROTTLE_CACHE]
        super().__init__()

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting) or None


class ApiKeyRateThrottle(_SettingRateThrottle):
    """Per API key; a signed-in user (session) counts as their own caller."""

    scope = "key"
    setting = "PROVENANCE_THROTTLE_KEY"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        key = api_key_of(request)
        if key is not None:
            ident = f"key-{key.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            return None
        return self.cache_format % {"scope": self.scope, "ident": ident}


class AnonymousRateThrottle(_SettingRateThrottle):
    """Per client address, for callers with neither key nor login. The address is
    the connection's own unless ``PROVENANCE_TRUSTED_PROXIES`` says how many proxies
    in front of us append to ``X-Forwarded-For`` (a client could write that header)."""

    scope = "anon"
    setting = "PROVENANCE_THROTTLE_ANON"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if api_key_of(request) is not None or (
            request.user is not None and request.user.is_authenticated
        ):
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def cache_table_ensure(**kwargs: Any) -> None:
    """After ``migrate``: create the database cache's table if a cache uses one
    (``createcachetable`` does nothing for a table that exists)."""
    uses_table = any(
        cache["BACKEND"].endswith("DatabaseCache") for cache in settings.CACHES.values()
    )
    if uses_table:
        call_command("createcachetable", database=kwargs.get("using", "default"), verbosity=0)
