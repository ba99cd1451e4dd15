"""Original bytes live in the ``originals`` storage (local folder or S3 bucket)
under names the server makes up; nothing is ever overwritten."""

from __future__ import annotations

import uuid
from typing import IO

from django.core.files import File as DjangoFile
from django.core.files.storage import Storage, storages
from django.utils import timezone


def _storage() -> Storage:
    return storages["originals"]


def original_save(*, stream: IO[bytes], organization_id: uuid.UUID, extension: str) -> str:
    """Store ``stream`` under a fresh server-generated key and return the key."""
    today = timezone.now()
    key = f"originals/{organization_id}/{today:%Y/%m}/{uuid.uuid4().hex}{extension}"
    stored = _storage().save(key, DjangoFile(stream, name=key))
    if stored != key:  # the storage renamed it: never happens with fresh uuids
        raise RuntimeError(f"storage refused the generated key {key!r}")
    return stored


def original_open(key: str) -> IO[bytes]:
    return _storage().open(key, "rb")


def original_delete(key: str) -> None:
    """Only used to roll back a save whose database row was never written."""
    _storage().delete(key)
