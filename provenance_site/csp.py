"""A Content-Security-Policy on every HTML response (Django 5.2 has none built in).

Scripts and ``<style>`` elements run only from this origin or with the request's
nonce (``request.csp_nonce``; templates write ``nonce="{{ request.csp_nonce }}"``),
so markup injected into a page cannot run script. ``style`` attributes stay
allowed: the document viewer places highlight boxes with them, and an attribute
cannot run script. A view that needs more (the API docs load Swagger UI from its
CDN) sets ``response.csp_extra_sources = {"script-src": ["https://…"], …}``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def csp_policy(nonce: str, extra: dict[str, list[str]] | None = None) -> str:
    """The policy text for one response."""
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'", f"'nonce-{nonce}'"],
        "style-src": ["'self'", f"'nonce-{nonce}'"],
        "style-src-elem": ["'self'", f"'nonce-{nonce}'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
    for name, sources in (extra or {}).items():
        directives[name] = [*directives.get(name, []), *sources]
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


class ContentSecurityPolicyMiddleware:
    """Gives each request a fresh nonce and each HTML response the policy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.csp_nonce = secrets.token_urlsafe(18)  # type: ignore[attr-defined]
        response = self.get_response(request)
        is_html = response.get("Content-Type", "").startswith("text/html")
        if is_html and HEADER not in response:
            extra = getattr(response, "csp_extra_sources", None)
            response[HEADER] = csp_policy(request.csp_nonce, extra)  # type: ignore[attr-defined]
        return response
