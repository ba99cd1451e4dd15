"""Members and their roles: the one place a role is given or taken away.

Reaching the admin takes Django's ``is_staff``; it follows the roles (a member
whose role works in the admin is staff, one whose roles do not is not), so an
officer is set up in one step instead of three screens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import transaction

from core.roles import ADMIN_SITE_ROLES, Role
from documents.models import Organization, OrganizationMember

if TYPE_CHECKING:
    from django.contrib.auth.models import User


MAX_USERNAME = 150  # Django's User.username


class MemberRejected(ValueError):
    """A role change that would leave an organization unmanageable, or a bad role."""


def staff_flag_sync(user: User) -> None:
    """``is_staff`` as the user's roles say (superusers keep theirs)."""
    if user.is_superuser:
        return
    staff = OrganizationMember.objects.filter(user=user, role__in=ADMIN_SITE_ROLES).exists()
    if user.is_staff != staff:
        user.is_staff = staff
        user.save(update_fields=["is_staff"])


@transaction.atomic
def member_set(*, organization: Organization, user: User, role: str) -> OrganizationMember:
    """Make ``user`` a member of ``organization`` with ``role`` (or change the role)."""
    if role not in Role.values:
        raise MemberRejected(f"unknown role {role!r}: one of {', '.join(Role.values)}")
    member, _created = OrganizationMember.objects.update_or_create(
        organization=organization, user=user, defaults={"role": role}
    )
    staff_flag_sync(user)
    return member


@transaction.atomic
def member_remove(*, member: OrganizationMember) -> None:
    """Take ``member`` out of its organization (and out of the admin if nothing else keeps them)."""
    user = member.user
    member.delete()
    staff_flag_sync(user)


def user_for_member(*, username: str, email: str = "") -> User:
    """The account called ``username``, made (without a usable password) when new."""
    if not username.strip() or len(username) > MAX_USERNAME:
        raise MemberRejected(f"a username has 1 to {MAX_USERNAME} characters")
    users = get_user_model()._default_manager
    user, created = users.get_or_create(username=username, defaults={"email": email})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user
