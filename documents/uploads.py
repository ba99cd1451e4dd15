"""Accepting an upload: validate, hash, sniff, store, record, queue.

Every rejection happens before anything is written; a failure after the
bytes are stored removes them again, so nothing is left half-written.
"""

from __future__ import annotations

import hashlib
import tempfile
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import PurePath
from typing import IO

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.urls import reverse

from audit.events import document_event_record
from core.exceptions import DomainRejected
from documents.ingestion.queueing import ingestion_queue
from documents.models import ApiKey, DataSource, File, Organization
from documents.sniffing import UnsupportedFile, sniff
from documents.storable_text import unstorable_character
from documents.storage import original_delete, original_save

_CHUNK = 1024 * 1024
_SNIFF_BYTES = 8192


class UploadRejected(DomainRejected):
    """An upload refused before anything is written; it names the file unless it says
    otherwise (``data_source``)."""

    default_param = "file"


@dataclass(frozen=True)
class UploadResult:
    file: File
    duplicate: bool


# Format characters a name needs: the zero-width (non-)joiner is spelling in Persian and
# Indic scripts. Every other one (Unicode category Cf) is invisible, and some reorder
# what follows them: "invoice\u202efdp.exe" shows as "invoiceexe.pdf".
_NEEDED_FORMAT_CHARACTERS = frozenset("\u200c\u200d")


def is_hidden_format_character(ch: str) -> bool:
    """An invisible formatting character a file name must not carry (bidi overrides
    and isolates, LRM/RLM, zero-width space, BOM, ...)."""
    return unicodedata.category(ch) == "Cf" and ch not in _NEEDED_FORMAT_CHARACTERS


def filename_sanitize(raw: str) -> str:
    """A safe display name; path parts, control characters, NULs and invisible
    formatting characters (bidi overrides) are refused."""
    if not raw or not raw.strip():
        raise UploadRejected("the file has no name", code="invalid_filename")
    if "\x00" in raw or any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise UploadRejected("the file name contains control characters", code="invalid_filename")
    hidden = next((ch for ch in raw if is_hidden_format_character(ch)), None)
    if hidden is not None:
        raise UploadRejected(
            f"the file name contains an invisible formatting character (U+{ord(hidden):04X}), "
            "which can disguise its extension",
            code="invalid_filename",
        )
    if "/" in raw or "\\" in raw or raw.strip() in {".", ".."}:
        raise UploadRejected("the file name must not contain a path", code="invalid_filename")
    name = unicodedata.normalize("NFC", raw.strip())
    if len(name) > 255:
        raise UploadRejected("the file name is longer than 255 characters", code="invalid_filename")
    return name


def data_source_for(*, organization: Organization, name: str) -> DataSource:
    source = None
    if unstorable_character(name) is None:  # such a name names no data source (nor queries)
        source = DataSource.objects.filter(organization=organization, name=name).first()
    if source is None:
        raise UploadRejected(
            f"unknown data source {name!r}: create it first "
            f"(POST {reverse('data-source-list')} with its name, an editor's or admin's key)",
            code="unknown_data_source",
            param="data_source",
        )
    return source


def _spool(stream: IO[bytes], limit: int) -> tuple[IO[bytes], str, int, bytes]:
    """Copy to a temp file, hashing; refuse past ``limit`` without reading it all."""
    spooled = tempfile.NamedTemporaryFile(prefix="upload-", suffix=".bin")  # noqa: SIM115
    digest, size, head = hashlib.sha256(), 0, b""
    while block := stream.read(_CHUNK):
        size += len(block)
        if size > limit:
            spooled.close()
            raise UploadRejected(
                f"the file is larger than the limit of {limit} bytes",
                code="file_too_large",
                status=413,
            )
        if len(head) < _SNIFF_BYTES:
            head += block[: _SNIFF_BYTES - len(head)]
        digest.update(block)
        spooled.write(block)
    spooled.flush()
    spooled.seek(0)
    if size == 0:
        spooled.close()
        raise UploadRejected("the file is empty", code="empty_file")
    return spooled, digest.hexdigest(), size, head


def file_upload(
    *,
    data_source: DataSource,
    name: str,
    stream: IO[bytes],
    uploaded_by: AbstractBaseUser | AnonymousUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
) -> UploadResult:
    """Store a new file (or a new revision of a file of the same name) and queue it;
    the upload is recorded with the client's address ``origin`` and ``user_agent``."""
    name = filename_sanitize(name)
    spooled, sha256, size, head = _spool(stream, settings.PROVENANCE_MAX_UPLOAD_BYTES)
    with spooled:
        try:
            sniffed = sniff(head=head, name=name, path=spooled.name)
        except UnsupportedFile as exc:
            raise UploadRejected(str(exc), code="unsupported_file_type", status=415) from exc
        current = _current_revision(data_source, name)
        if current is not None and current.sha256 == sha256:
            return UploadResult(file=current, duplicate=True)
        key = original_save(
            stream=spooled,
            organization_id=data_source.organization_id,
            extension=PurePath(name).suffix.lower()[:10],
        )
    try:
        record = _record(
            data_source,
            name,
            sniffed.kind,
            sniffed.content_type,
            size,
            sha256=sha256,
            key=key,
            user=uploaded_by,
            api_key=api_key,
            origin=origin,
            user_agent=user_agent,
        )
    except Exception:
        original_delete(key)
        raise
    return UploadResult(file=record, duplicate=False)


def _current_revision(data_source: DataSource, name: str) -> File | None:
    """The name's latest revision that identical bytes would duplicate: not failed,
    not deleted (uploading a deleted document again brings it back)."""
    return (
        File.objects.filter(data_source=data_source, name=name, deleted_at__isnull=True)
        .exclude(status="failed")
        .order_by("-revision")
        .first()
    )


@transaction.atomic
def _record(
    data_source: DataSource,
    name: str,
    kind: str,
    content_type: str,
    size: int,
    *,
    sha256: str,
    key: str,
    user: AbstractBaseUser | AnonymousUser | None,
    api_key: ApiKey | None,
    origin: str | None,
    user_agent: str | None,
) -> File:
    DataSource.objects.select_for_update().get(pk=data_source.pk)  # serialises revision numbers
    latest = File.objects.filter(data_source=data_source, name=name).order_by("-revision").first()
    # the user model is auth.User: anyone else (nobody, AnonymousUser) uploads as nobody
    uploader = user if isinstance(user, User) else None
    record = File.objects.create(
        document_id=latest.document_id if latest else uuid.uuid4(),
        organization_id=data_source.organization_id,
        data_source=data_source,
        name=name,
        kind=kind,
        content_type=content_type,
        size=size,
        sha256=sha256,
        storage_key=key,
        revision=latest.revision + 1 if latest else 1,
        uploaded_by=uploader,
        uploaded_with_key=api_key,
    )
    document_event_record(
        kind="revision" if record.revision > 1 else "upload",
        file=record,
        user=uploader,
        api_key=api_key,
        origin=origin,
        user_agent=user_agent,
    )
    ingestion_queue(file_id=record.pk)
    return record
