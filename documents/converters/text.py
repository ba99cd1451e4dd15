"""Plain text is ingested as is; it simply has no headings."""

from __future__ import annotations

from documents.converters.base import Conversion, ProgressReport
from documents.converters.markdown import decode_utf8


class TextConverter:
    name = "text-passthrough"
    version = "1.0.0"

    def convert(self, data: bytes, progress: ProgressReport | None = None) -> Conversion:
        return Conversion(
            markdown=decode_utf8(data), converter=self.name, converter_version=self.version
        )
