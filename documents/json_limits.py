"""How deep and how large a JSON text we agree to parse: the one rule for request
bodies, uploaded JSON documents and anything else read back with ``json.loads``.

Python's JSON decoder recurses once per nesting level, so ``[[[[…`` a thousand
deep raises ``RecursionError`` (a 500, or a crashed sniffer) before any of our
checks could run. The depth is therefore measured first, by a scan that does not
recurse (strings are skipped whole, escapes included), and a text nested deeper
than its limit is refused as ``JsonTooDeep`` without being decoded.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A request body is an object of a few fields; 64 levels is far past any real one.
MAX_BODY_DEPTH = 64
# An uploaded JSON document becomes nested headings: past this it is refused with a
# reason, and its converter (which walks the tree recursively) stays within Python's
# recursion limit.
MAX_DOCUMENT_DEPTH = 200
# (the largest JSON request body read is the setting PROVENANCE_MAX_JSON_BODY_BYTES)

# a whole JSON string (escapes included), or one bracket outside any string
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_OPENERS = frozenset("[{")
_CLOSERS = frozenset("]}")


class JsonTooDeep(ValueError):
    """The text nests arrays/objects deeper than the limit it was read under."""

    def __init__(self, limit: int):
        super().__init__(f"JSON nesting is deeper than {limit} levels")
        self.limit = limit


def json_depth_exceeds(text: str, limit: int) -> bool:
    """Whether ``text`` opens more than ``limit`` arrays/objects at once; stops at the
    first bracket past the limit. Brackets inside strings do not count; an unclosed
    string leaves the brackets after its quote counted (the text is invalid anyway)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case, decided without a scan
    depth = 0
    for match in _TOKENS.finditer(text):
        found = match.group()
        if found in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif found in _CLOSERS:
            depth -= 1
    return False


def json_loads_bounded(text: str | bytes, *, max_depth: int, **options: Any) -> Any:
    """``json.loads(text, **options)`` for text nested at most ``max_depth`` deep, else
    ``JsonTooDeep`` (``ValueError``s of the decoder pass through as ever)."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8-sig")
    if json_depth_exceeds(text, max_depth):
        raise JsonTooDeep(max_depth)
    return json.loads(text, **options)
