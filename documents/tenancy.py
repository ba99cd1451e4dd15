"""Which organization a request acts for; every query filters by it."""

from __future__ import annotations

from django.http import HttpRequest

from documents.models import ApiKey, Organization


def organization_of(request: HttpRequest) -> Organization | None:
    """The API key's organization, or the signed-in user's first membership."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiKey):
        return auth.organization
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    membership = user.memberships.select_related("organization").order_by("id").first()
    return membership.organization if membership else None
