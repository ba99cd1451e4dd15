"""Who may see the web pages: a signed-in member of an organization.

Every page acts for ``request.organization`` and filters by it, so an id of
another tenant is simply not found (404), never forbidden (which would leak
that it exists).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import render

from core.tenancy import organization_of
from documents.models import Organization


class MemberRequest(HttpRequest):
    """A request whose user belongs to ``organization`` (set by :func:`member_required`)."""

    organization: Organization
    user: User  # signed in: member_required lets no one else through


View = Callable[..., HttpResponseBase]


def member_required(view: View) -> View:
    """Sign-in first; a user of no organization gets a page saying so (403)."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        organization = organization_of(request)
        if organization is None:
            return render(request, "web/no_organization.html", status=403)
        request.organization = organization  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper
