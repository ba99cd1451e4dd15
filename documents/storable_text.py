"""Text PostgreSQL can store: no NUL character, no unpaired UTF-16 surrogate.

JSON can spell both (``"\\u0000"``, ``"\\ud800"``) and Python decodes them into a
``str``; PostgreSQL then refuses the NUL and psycopg cannot encode the
surrogate, so the request would fail with a 500 after doing part of its work.
Requests are checked here first and answered with a 400 that says where.
"""

from __future__ import annotations

import re

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_character(text: str) -> str | None:
    """A description of the first character PostgreSQL cannot store, or None."""
    match = _UNSTORABLE.search(text)
    if match is None:
        return None
    kind = "a NUL character" if match.group() == "\x00" else "an unpaired UTF-16 surrogate"
    return f"{kind} (U+{ord(match.group()):04X}) at character {match.start()}"


def _escaped(text: str) -> str:
    return _UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def first_unstorable(value: object, path: str = "") -> tuple[str, str] | None:
    """``(path, description)`` of the first string, key or value, in a parsed JSON
    value that PostgreSQL cannot store; paths read like ``messages[0].content``."""
    if isinstance(value, str):
        problem = unstorable_character(value)
        return (path, problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            shown = _escaped(str(key))  # the path is echoed back: it must be storable too
            key_path = f"{path}.{shown}" if path else shown
            problem = unstorable_character(str(key))
            if problem:
                return (key_path, f"{problem} in the key")
            found = first_unstorable(item, key_path)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = first_unstorable(item, f"{path}[{index}]")
            if found:
                return found
    return None
