"""The secret that keys the evidence chain, kept outside the database.

A database-only attacker can rewrite rows and recompute plain SHA-256 hashes;
without this key they cannot recompute HMACs. Each chain entry records the
fingerprint of the key that made it (``key_id``), so a rotated key's entries
still verify with the retired key, and entries made before the chain was keyed
(``key_id`` empty) verify with plain SHA-256.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from provenance_site.env import secret_file_ensure

MIN_KEY_CHARS = 32
UNKEYED = ""  # the key_id of entries made with plain SHA-256, before the chain was keyed


@dataclass(frozen=True)
class AuditKey:
    """One HMAC key and its public fingerprint (safe to store next to what it signs)."""

    key_id: str
    secret: bytes


def key_fingerprint(secret: bytes) -> str:
    """16 hex characters naming a key without revealing it."""
    return hashlib.sha256(b"provenance-audit-key-id\x00" + secret).hexdigest()[:16]


def _key(text: str, origin: str) -> AuditKey:
    text = text.strip()
    if len(text) < MIN_KEY_CHARS:
        raise ImproperlyConfigured(f"{origin} must hold at least {MIN_KEY_CHARS} characters")
    secret = text.encode()
    return AuditKey(key_fingerprint(secret), secret)


def _generated(path: Path) -> str:
    """The key in ``path``, made there (random, 0600) on first use."""
    return secret_file_ensure(path, lambda: secrets.token_hex(32))


@cache
def _keyring(configured: str, generate: str, retired: str) -> tuple[AuditKey, dict[str, AuditKey]]:
    if configured:
        current = _key(configured, "PROVENANCE_AUDIT_KEY")
    elif generate:
        current = _key(_generated(Path(generate)), generate)
    else:
        raise ImproperlyConfigured(
            "the audit chain needs a key: set PROVENANCE_AUDIT_KEY or PROVENANCE_AUDIT_KEY_FILE"
        )
    ring = {current.key_id: current}
    for line in retired.replace(",", "\n").splitlines():
        if line.strip():
            old = _key(line, "each of PROVENANCE_AUDIT_RETIRED_KEYS")
            ring.setdefault(old.key_id, old)
    return current, ring


def _settings_keyring() -> tuple[AuditKey, dict[str, AuditKey]]:
    generate = getattr(settings, "PROVENANCE_AUDIT_KEY_GENERATE_FILE", None)
    return _keyring(
        getattr(settings, "PROVENANCE_AUDIT_KEY", ""),
        str(generate or ""),
        getattr(settings, "PROVENANCE_AUDIT_RETIRED_KEYS", ""),
    )


def audit_key() -> AuditKey:
    """The key new chain entries and exported heads are made with."""
    return _settings_keyring()[0]


def audit_keyring() -> dict[str, AuditKey]:
    """Every key the verifier knows, by fingerprint: the current one and retired ones."""
    return _settings_keyring()[1]


def digest(message: bytes, key: AuditKey | None) -> str:
    """HMAC-SHA256 of ``message`` with ``key``; plain SHA-256 for unkeyed (legacy) entries."""
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()
