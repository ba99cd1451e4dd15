"""Who may see the web pages: a signed-in member of an organization whose role
allows what the page does (core.roles, the rules the API and the admin read too).

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

from core.roles import Action, role_allows, roles_allowing
from core.tenancy import membership_of
from documents.models import Organization


class MemberRequest(HttpRequest):
    """A request whose user belongs to ``organization`` with ``role`` (set by
    :func:`member_required`)."""

    organization: Organization
    role: str
    user: User  # signed in: member_required lets no one else through


View = Callable[..., HttpResponseBase]


def member_required(action: Action, *, post: Action | None = None) -> Callable[[View], View]:
    """Sign-in first; a user of no organization gets a page saying so (403), a
    member whose role does not allow ``action`` (``post`` for a POST, when given)
    a page saying which role may (403). The rule is kept on the view as
    ``role_actions``, where the route tests read it."""
    actions = {"GET": action, "HEAD": action, "POST": post or action}

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
            membership = membership_of(request)
            if membership is None:
                return render(request, "web/no_organization.html", status=403)
            wanted = actions.get(request.method or "", action)
            if not role_allows(membership.role, wanted):
                context = {"role": membership.get_role_display(), "allowed": roles_allowing(wanted)}
                return render(request, "web/role_refused.html", context, status=403)
            request.organization = membership.organization  # type: ignore[attr-defined]
            request.role = membership.role  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        wrapper.role_actions = actions  # type: ignore[attr-defined]
        return wrapper

    return decorate
