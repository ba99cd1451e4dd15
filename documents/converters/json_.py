"""JSON to Markdown whose heading path is the JSON key path.

Nested objects become nested headings (dotted paths past depth 6), scalar
members ``- **key**: value`` lines, arrays of flat objects tables, arrays of
scalars lists and arrays of objects ``key[i]`` headings. Keys and values both
surface, so either can be found by search and cited.
"""

from __future__ import annotations

import json
from typing import Any

from documents.converters._mdbuild import MarkdownBuilder, clean_inline, table_lines
from documents.converters.base import Conversion, ConversionError, ProgressReport
from documents.json_limits import MAX_DOCUMENT_DEPTH, JsonTooDeep, json_loads_bounded

_MAX_HEADING = 6


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return clean_inline(value)
    return json.dumps(value)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _key(key: str) -> str:
    return clean_inline(key) or '""'


class _Renderer:
    def __init__(self) -> None:
        self.md = MarkdownBuilder()
        self.headings = 0

    def heading(self, path: list[str]) -> None:
        """Depth ``len(path)``; beyond six levels the extra path is folded into the text."""
        if len(path) <= _MAX_HEADING:
            text, level = path[-1], len(path)
        else:
            text, level = ".".join(path[_MAX_HEADING - 1 :]), _MAX_HEADING
        self.md.heading(level, text)
        self.headings += 1

    def value(self, value: Any, path: list[str]) -> None:
        if isinstance(value, dict):
            self.object(value, path)
        elif isinstance(value, list):
            self.array(value, path)
        else:
            self.md.blank()
            self.md.line(_scalar(value) or '""')
            self.md.blank()

    def object(self, obj: dict, path: list[str]) -> None:
        scalars = [(k, v) for k, v in obj.items() if _is_scalar(v)]
        if scalars:
            self.md.blank()
            for k, v in scalars:
                self.md.line(f"- **{_key(k)}**: {_scalar(v)}")
            self.md.blank()
        for k, v in obj.items():
            if not _is_scalar(v):
                self.heading([*path, _key(k)])
                self.value(v, [*path, _key(k)])

    def array(self, items: list, path: list[str]) -> None:
        if not items:
            self.md.blank()
            self.md.line("(empty list)")
            self.md.blank()
        elif all(_is_scalar(v) for v in items):
            self.md.blank()
            for v in items:
                self.md.line(f"- {_scalar(v)}")
            self.md.blank()
        elif all(
            isinstance(v, dict) and v and all(_is_scalar(x) for x in v.values()) for v in items
        ):
            columns: list[str] = []
            for item in items:
                columns.extend(k for k in item if k not in columns)
            rows = [columns] + [
                [_scalar(item[c]) if c in item else "" for c in columns] for item in items
            ]
            self.md.blank()
            for line in table_lines(rows):
                self.md.line(line)
            self.md.blank()
        else:
            name = path[-1] if path else ""
            for i, item in enumerate(items):
                step = [*path, f"{name}[{i}]"]
                self.heading(step)
                self.value(item, step)


class JsonConverter:
    """JSON to Markdown; invalid JSON is reported with the parser's line and column."""

    name = "json-markdown"
    version = "1.0.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConversionError(
                f"invalid JSON: the file is not UTF-8 text (byte {exc.start})"
            ) from exc
        try:
            doc = json_loads_bounded(text, max_depth=MAX_DOCUMENT_DEPTH)
        except JsonTooDeep as exc:
            raise ConversionError(
                f"JSON nesting is too deep: arrays and objects nest more than {exc.limit} "
                "levels; flatten it or split it into several files"
            ) from exc
        except json.JSONDecodeError as exc:
            raise ConversionError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from exc
        renderer = _Renderer()
        renderer.value(doc, [])
        markdown, _pages, _spans = renderer.md.build(paged=False)
        kind = type(doc).__name__
        return Conversion(
            markdown=markdown,
            converter=self.name,
            converter_version=self.version,
            line_pages=[],
            metadata={
                "root_type": {"dict": "object", "list": "array"}.get(kind, kind),
                "headings": renderer.headings,
            },
        )
