"""Which organization a request acts for; every query filters by it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.exceptions import PermissionDenied

from core.authentication import api_key_of
from documents.models import Organization, OrganizationMember

if TYPE_CHECKING:
    from django.http import HttpRequest
    from rest_framework.request import Request


_MEMBERSHIP = "_provenance_membership"


def membership_of(request: HttpRequest | Request) -> OrganizationMember | None:
    """The signed-in user's membership the request acts through (their first one),
    read once per request."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    raw = getattr(request, "_request", request)  # DRF wraps Django's request
    if not hasattr(raw, _MEMBERSHIP):
        membership = user.memberships.select_related("organization").order_by("id").first()
        setattr(raw, _MEMBERSHIP, membership)
    return getattr(raw, _MEMBERSHIP)


def organization_of(request: HttpRequest | Request) -> Organization | None:
    """The API key's organization, or the signed-in user's first membership."""
    key = api_key_of(request)
    if key is not None:
        return key.organization
    membership = membership_of(request)
    return membership.organization if membership else None


def role_of(request: HttpRequest | Request) -> str | None:
    """The role the request acts with (core.roles): its API key's, else its member's."""
    key = api_key_of(request)
    if key is not None:
        return key.role
    membership = membership_of(request)
    return membership.role if membership else None


def member_organization(request: HttpRequest | Request) -> Organization:
    """``organization_of`` in a view ``HasOrganization`` guards (the API's default
    permission), which refused every request without one before the view ran."""
    organization = organization_of(request)
    if organization is None:
        raise PermissionDenied("no organization")
    return organization
