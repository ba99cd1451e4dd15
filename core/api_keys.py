"""Issuing and checking API keys; only their SHA-256 is ever stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from documents.models import ApiKey, Organization

KEY_PREFIX = "pvk_"
# last_used_at is for people ("used today?"); writing it on every request would make
# every read a write (a WAL flush per call), so it is refreshed at most this often
LAST_USED_RESOLUTION = timedelta(seconds=60)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def api_key_create(*, organization: Organization, name: str = "") -> tuple[ApiKey, str]:
    """Make a key; returns the row and the full key, which is never shown again."""
    prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(
        organization=organization, name=name, prefix=prefix, key_hash=_digest(secret)
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
