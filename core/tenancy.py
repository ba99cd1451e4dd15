"""Which organization a request acts for; every query filters by it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.exceptions import PermissionDenied

from core.authentication import api_key_of
from documents.models import Organization, OrganizationMember

if TYPE_CHECKING:
    import uuid

    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser
    from django.http import HttpRequest
    from rest_framework.request import Request


def organization_of(request: HttpRequest | Request) -> Organization | None:
    """The API key's organization, or the signed-in user's first membership."""
    key = api_key_of(request)
    if key is not None:
        return key.organization
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    membership = user.memberships.select_related("organization").order_by("id").first()
    return membership.organization if membership else None


def member_organization(request: HttpRequest | Request) -> Organization:
    """``organization_of`` in a view ``HasOrganization`` guards (the API's default
    permission), which refused every request without one before the view ran."""
    organization = organization_of(request)
    if organization is None:
        raise PermissionDenied("no organization")
    return organization


def organization_ids_of(user: AbstractBaseUser | AnonymousUser) -> list[uuid.UUID]:
    """The ids of the organizations ``user`` is a member of (the admin scopes by them)."""
    if user.pk is None:  # nobody signed in: a member of nothing
        return []
    memberships = OrganizationMember.objects.filter(user_id=user.pk)
    return list(memberships.values_list("organization_id", flat=True))
