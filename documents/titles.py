"""A document's own title: what its format records (PDF metadata, DOCX/PPTX core
properties, HTML ``<title>``: the converters' ``metadata["title"]``), else its first
heading. Kept in the conversion's metadata when it is stored, so an answer's sources
name it without reading the Markdown again."""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_TITLE_CHARS = 300  # a title, not a paragraph someone styled as one
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)


def document_title(metadata: Mapping[str, object], markdown: str, body_start: int = 0) -> str:
    """The recorded title, else the first ATX heading of the body, else ""."""
    recorded = metadata.get("title")
    if isinstance(recorded, str) and recorded.strip():
        return recorded.strip()[:MAX_TITLE_CHARS]
    heading = _HEADING.search(markdown, body_start)
    return heading.group(1).strip()[:MAX_TITLE_CHARS] if heading else ""
