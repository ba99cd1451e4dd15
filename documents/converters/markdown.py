"""Markdown is ingested as uploaded: line numbers and offsets stay the user's.

Only a leading byte-order mark is dropped, and YAML front matter is recorded
and kept out of chunks (``body_start``) without being removed from the text.
"""

from __future__ import annotations

import re

from documents.converters.base import Conversion, ConversionError, ProgressReport

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)


# more invalid bytes than this share means the file is not text in any encoding we read
MAX_INVALID_SHARE = 0.01


def decode_utf8(data: bytes) -> str:
    """Text of ``data``; a few invalid bytes become U+FFFD so line numbers survive.

    A file that is mostly not UTF-8 fails with a reason naming the first bad byte.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(1, len(text) * MAX_INVALID_SHARE):
            raise ConversionError(
                f"the file is not valid UTF-8 text (byte 0x{data[exc.start]:02x} "
                f"at offset {exc.start})"
            ) from exc
    return text.removeprefix("\ufeff")


class MarkdownConverter:
    name = "markdown-passthrough"
    version = "1.0.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        text = decode_utf8(data)
        match = _FRONT_MATTER.match(text)
        front_matter = match.group(1) or "" if match else ""
        return Conversion(
            markdown=text,
            converter=self.name,
            converter_version=self.version,
            body_start=match.end() if match else 0,
            front_matter=front_matter,
        )
