"""The original bytes of a file revision as a download, byte for byte.

Django names a non-ASCII file only in ``filename*`` (RFC 5987); clients that
read only ``filename`` then save "download" or the URL's last segment. RFC 6266
sends both: an ASCII stand-in first, the exact name after it.
"""

from __future__ import annotations

import os
import re
import unicodedata
from urllib.parse import quote

from django.http import FileResponse

from documents.models import File
from documents.storage import original_open
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


def original_download(record: File) -> FileResponse:
    """The stored bytes with their type, length, sha256 and name."""
    response = FileResponse(original_open(record.storage_key), content_type=record.content_type)
    response["Content-Disposition"] = content_disposition(record.name)
    response["Content-Length"] = str(record.size)
    response["X-Content-SHA256"] = record.sha256
    return response
