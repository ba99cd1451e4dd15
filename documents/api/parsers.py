"""Multipart parsing that keeps the client's file name as sent.

Django silently strips path parts from upload names; we want to refuse
"../../etc/passwd" with a clear error instead, so the raw name goes through
``filename_sanitize`` (our stored names never touch a filesystem path anyway).
"""

from __future__ import annotations

import html

from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, JSONParser, MultiPartParser

from documents.api.errors import ApiError
from documents.storable_text import first_unstorable
from documents.uploads import UploadRejected, filename_sanitize


class _RawNameParser(DjangoMultiPartParser):
    def sanitize_file_name(self, file_name: str) -> str | None:
        return filename_sanitize(html.unescape(file_name))


class RawNameMultiPartParser(MultiPartParser):
    """DRF's multipart parser, keeping raw file names for validation."""

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        parser_context = parser_context or {}
        request = parser_context["request"]
        encoding = parser_context.get("encoding", "utf-8")
        meta = request.META.copy()
        meta["CONTENT_TYPE"] = media_type
        try:
            parser = _RawNameParser(meta, stream, request.upload_handlers, encoding)
            data, files = parser.parse()
            return DataAndFiles(data, files)
        except UploadRejected as exc:
            raise ApiError(
                exc.message, code=exc.code, status_code=exc.status, param="file"
            ) from exc
        except MultiPartParserError as exc:
            raise ParseError(f"Multipart form parse error - {exc}") from exc


class StorableJSONParser(JSONParser):
    """DRF's JSON parser, refusing text PostgreSQL cannot store (see ``storable_text``)
    with a 400 ``unstorable_text`` naming the field, before any view acts on it."""

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        data = super().parse(stream, media_type, parser_context)
        found = first_unstorable(data)
        if found is not None:
            path, problem = found
            where = f"'{path}'" if path else "the body"
            raise ApiError(
                f"{where} holds {problem}, which cannot be stored as text",
                code="unstorable_text",
                param=path or None,
            )
        return data
