"""Issuing and checking API keys; only their SHA-256 is ever stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core.exceptions import DomainRejected
from core.roles import Role, role_may_grant
from documents.models import ApiKey, Organization

KEY_PREFIX = "pvk_"
# last_used_at is for people ("used today?"); writing it on every request would make
# every read a write (a WAL flush per call), so it is refreshed at most this often
LAST_USED_RESOLUTION = timedelta(seconds=60)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeyRejected(DomainRejected):
    """A key that cannot be made or revoked as asked."""


@transaction.atomic
def api_key_create(
    *,
    organization: Organization,
    role: str = Role.EDITOR,
    name: str = "",
    granted_by: str | None = None,
) -> tuple[ApiKey, str]:
    """Make a key acting with ``role``; returns the row and the full key, which is
    never shown again. A caller acting as ``granted_by`` (a role; None for an
    operator's command) may give no role above its own (:func:`role_may_grant`)."""
    if role not in Role.values:
        raise ApiKeyRejected(
            f"unknown role {role!r}: one of {', '.join(Role.values)}",
            code="invalid_role",
            param="role",
        )
    if granted_by is not None and not role_may_grant(granted_by, role):
        raise ApiKeyRejected(
            f"the {granted_by} role may not make a key with the {role} role",
            code="role_above_own",
            status=403,
            param="role",
        )
    prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(
        organization=organization, name=name, role=role, prefix=prefix, key_hash=_digest(secret)
    )
    return key, secret


def api_key_verify(*, presented: str) -> ApiKey | None:
    """The live key matching ``presented``, or None; constant-time comparison."""
    if not presented.startswith(KEY_PREFIX) or len(presented) > 200:
        return None
    prefix = presented[len(KEY_PREFIX) :].split("_", 1)[0]
    key = (
        ApiKey.objects.select_related("organization")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, _digest(presented)):
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Revoke ``key`` for good: from now on it answers 401 everywhere. The row stays,
    so what the key did is still attributed to it; 409 ``already_revoked`` twice."""
    revoked = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if not revoked:
        raise ApiKeyRejected(
            f"the key {key.prefix}… is already revoked",
            code="already_revoked",
            status=409,
            param="key_id",
        )
    key.refresh_from_db(fields=["revoked_at"])
    return key


def api_keys_of(*, organization: Organization) -> QuerySet[ApiKey]:
    """The organization's keys, revoked ones too, newest first."""
    return ApiKey.objects.filter(organization=organization).order_by("-created_at", "-id")


def api_key_get(*, organization: Organization, key_id: str) -> ApiKey:
    """The organization's key ``key_id``; another tenant's is not found."""
    key = (
        api_keys_of(organization=organization).filter(pk=int(key_id)).first()
        if key_id.isascii() and key_id.isdigit() and len(key_id) < 19  # within a bigint
        else None
    )
    if key is None:
        raise ApiKeyRejected(
            f"No API key found with id '{key_id}'.", code="not_found", status=404, param="key_id"
        )
    return key
