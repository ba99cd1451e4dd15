"""Multipart parsing that keeps the client's file name as sent.

Django silently strips path parts from upload names; we want to refuse
"../../etc/passwd" with a clear error instead, so the raw name goes through
``filename_sanitize`` (our stored names never touch a filesystem path anyway).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import (  # type: ignore[attr-defined]  # get_encoding: no stub
    DataAndFiles,
    JSONParser,
    MultiPartParser,
    get_encoding,
)
from rest_framework.utils import json

from core.errors import ApiError
from documents.json_limits import MAX_BODY_DEPTH, JsonTooDeep, json_loads_bounded
from documents.storable_text import first_unstorable
from documents.uploads import filename_sanitize


class _RawNameParser(DjangoMultiPartParser):
    def sanitize_file_name(self, file_name: str) -> str | None:
        return filename_sanitize(html.unescape(file_name))


class RawNameMultiPartParser(MultiPartParser):
    """DRF's multipart parser, keeping raw file names for validation."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> DataAndFiles:
        parser_context = parser_context or {}
        request = parser_context["request"]
        encoding = parser_context.get("encoding", "utf-8")
        meta = request.META.copy()
        meta["CONTENT_TYPE"] = media_type
        try:  # a refused name (UploadRejected) answers as any refusal does: core.errors
            # the request's body stream: DRF's stubs say IO, Django's a protocol IO does not meet
            parser = _RawNameParser(meta, stream, request.upload_handlers, encoding)  # type: ignore[arg-type]
            data, files = parser.parse()
            return DataAndFiles(data, files)
        except MultiPartParserError as exc:
            raise ParseError(f"Multipart form parse error - {exc}") from exc


class StorableJSONParser(JSONParser):
    """DRF's JSON parser within our limits: a body larger than
    ``PROVENANCE_MAX_JSON_BODY_BYTES`` is refused with 413 ``request_too_large``, one
    nested deeper than ``MAX_BODY_DEPTH`` with 400 ``json_too_deep`` (before it is
    decoded: the decoder would recurse), and text PostgreSQL cannot store with 400
    ``unstorable_text`` naming the field (see ``storable_text``)."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:  # any JSON value (the stubs say a dict)
        raw = _read_bounded(stream, settings.PROVENANCE_MAX_JSON_BODY_BYTES)
        try:
            text = raw.decode(get_encoding(parser_context or {}))
            constant = json.strict_constant if self.strict else None  # NaN, Infinity
            data = json_loads_bounded(text, max_depth=MAX_BODY_DEPTH, parse_constant=constant)
        except JsonTooDeep as exc:
            raise ApiError(
                f"the body is nested deeper than {exc.limit} levels", code="json_too_deep"
            ) from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        _refuse_unstorable(data)
        return data


def _read_bounded(stream: IO[bytes] | None, limit: int) -> bytes:
    """The body's bytes, or 413 once more than ``limit`` arrive (the rest unread)."""
    raw = stream.read(limit + 1) if stream is not None else b""
    if len(raw) > limit:
        raise ApiError(
            f"the JSON body is larger than the limit of {limit} bytes",
            code="request_too_large",
            status_code=413,
        )
    return raw


def _refuse_unstorable(data: object) -> None:
    found = first_unstorable(data)
    if found is not None:
        path, problem = found
        where = f"'{path}'" if path else "the body"
        raise ApiError(
            f"{where} holds {problem}, which cannot be stored as text",
            code="unstorable_text",
            param=path or None,
        )
