"""Who may see the web pages: a signed-in member of an organization.

Every page acts for ``request.organization`` and filters by it, so an id of
another tenant is simply not found (404), never forbidden (which would leak
that it exists).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from documents.models import Organization
from documents.tenancy import organization_of


class MemberRequest(HttpRequest):
    """A request whose user belongs to ``organization`` (set by :func:`member_required`)."""

    organization: Organization


View = Callable[..., HttpResponse]


def member_required(view: View) -> View:
    """Sign-in first; a user of no organization gets a page saying so (403)."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        organization = organization_of(request)
        if organization is None:
            return render(request, "web/no_organization.html", status=403)
        request.organization = organization  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper
