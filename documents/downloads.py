"""The original bytes of a file revision as a download, byte for byte.

Django names a non-ASCII file only in ``filename*`` (RFC 5987); clients that
read only ``filename`` then save "download" or the URL's last segment. RFC 6266
sends both: an ASCII stand-in first, the exact name after it.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import quote

from django.conf import settings
from django.http import FileResponse, HttpResponse

from documents.models import File
from documents.originals import OriginalAltered, original_bytes, original_stream
from documents.uploads import is_hidden_format_character

_NOT_PLAIN = re.compile(r'[^\x20-\x7e]|["\\;%]')


def _plain(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NOT_PLAIN.sub("_", folded)


def ascii_filename(name: str) -> str:
    """An ASCII stand-in for ``name``: accents dropped, anything else ``_``; a name
    with nothing left ("日本語.md") becomes ``download`` with its extension."""
    stem, extension = os.path.splitext(name)
    plain_stem = _plain(stem).strip()
    if not plain_stem.strip("_.- "):
        plain_stem = "download"
    return plain_stem + _plain(extension)


def content_disposition(name: str) -> str:
    """Both names of RFC 6266, without invisible formatting characters: a name stored
    before they were refused must not reorder its extension on the client's screen."""
    name = "".join(ch for ch in name if not is_hidden_format_character(ch)) or "download"
    fallback = ascii_filename(name)
    if fallback == name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def original_download(record: File, *, where: str = "a download") -> FileResponse:
    """The stored bytes with their type, length, sha256 and name, verified against the
    recorded sha256 as they are served: up to ``PROVENANCE_VERIFY_BEFORE_SEND_BYTES``
    before the first byte is sent (:class:`~documents.originals.OriginalAltered`,
    answered 409 ``original_altered``), larger ones as they stream (the last block
    held back until the hash is known, so an altered original ends short)."""
    if record.size <= settings.PROVENANCE_VERIFY_BEFORE_SEND_BYTES:
        body: Iterable[bytes] = [original_bytes(record, where=where)]
    else:
        body = original_stream(record, where=where)
    response = FileResponse(body, content_type=record.content_type)
    response["Content-Disposition"] = content_disposition(record.name)
    response["Content-Length"] = str(record.size)
    response["X-Content-SHA256"] = record.sha256
    return response


def original_download_page(record: File, *, where: str) -> HttpResponse | FileResponse:
    """:func:`original_download` for a web or admin page: an altered original is a
    409 page saying so (REST answers it in the error shape)."""
    try:
        return original_download(record, where=where)
    except OriginalAltered as exc:
        return HttpResponse(exc.message, status=409, content_type="text/plain; charset=utf-8")
