"""The admin's permissions, derived from roles (core.roles) instead of groups.

Django asks every authentication backend for a user's permissions; this one
answers from the user's memberships, so an officer needs a membership with
the ``officer`` role and nothing else. A permission held through a role in one
organization is checked against the organization of the record at hand
(:func:`organizations_granting`), never lent to another one.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.contrib.auth.backends import BaseBackend
from django.contrib.auth.models import Permission

from core.roles import ADMIN_PERMISSIONS, AUDITED_APPS, GRANTS, Action
from documents.models import OrganizationMember

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser

_CACHE = "_role_permissions_cache"


def _audit_views() -> frozenset[str]:
    rows = Permission.objects.filter(
        content_type__app_label__in=AUDITED_APPS, codename__startswith="view_"
    ).values_list("content_type__app_label", "codename")
    return frozenset(f"{app}.{codename}" for app, codename in rows)


def role_permissions(role: str) -> frozenset[str]:
    """The admin permissions ``role`` brings."""
    actions = GRANTS.get(role, frozenset())
    granted = frozenset().union(*(ADMIN_PERMISSIONS[a] for a in actions))
    return granted | _audit_views() if Action.AUDIT in actions else granted


def _by_organization(user: AbstractBaseUser | AnonymousUser) -> dict[uuid.UUID, frozenset[str]]:
    """Each organization of ``user`` with the permissions its role brings (per request)."""
    cached = getattr(user, _CACHE, None)
    if cached is None:
        memberships = OrganizationMember.objects.filter(user__pk=user.pk or 0)
        cached = {
            organization_id: role_permissions(role)
            for organization_id, role in memberships.values_list("organization_id", "role")
        }
        setattr(user, _CACHE, cached)
    return cached


def organizations_granting(
    user: AbstractBaseUser | AnonymousUser, permission: str
) -> list[uuid.UUID]:
    """The organizations in which ``user``'s role brings ``permission``."""
    if not user.is_active or user.pk is None:
        return []
    return [org for org, held in _by_organization(user).items() if permission in held]


class RolePermissionBackend(BaseBackend):
    """The permissions of the user's roles; authenticates nobody itself."""

    def get_all_permissions(
        self, user_obj: AbstractBaseUser | AnonymousUser, obj: object = None
    ) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        return set().union(*_by_organization(user_obj).values())

    def has_module_perms(self, user_obj: AbstractBaseUser | AnonymousUser, app_label: str) -> bool:
        """Whether any permission of the user's roles is in ``app_label`` (the admin index)."""
        held = self.get_all_permissions(user_obj)
        return any(permission.startswith(f"{app_label}.") for permission in held)
