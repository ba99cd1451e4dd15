"""Converters from uploaded file kinds to Markdown with a location map.

``converter_for(kind)`` is the only entry point the pipeline uses; the
modules are imported lazily so a worker that only sees Markdown never loads
PyMuPDF.
"""

from __future__ import annotations

from importlib import import_module

from documents.converters.base import Conversion, ConversionError, Converter, SourceSpan

__all__ = ["Conversion", "ConversionError", "Converter", "SourceSpan", "converter_for", "KINDS"]

# sniffed kind -> "module:ClassName"
_CONVERTERS = {
    "markdown": "documents.converters.markdown:MarkdownConverter",
    "text": "documents.converters.text:TextConverter",
    "pdf": "documents.converters.pdf:PdfConverter",
    "docx": "documents.converters.docx:DocxConverter",
    "pptx": "documents.converters.pptx:PptxConverter",
    "json": "documents.converters.json_:JsonConverter",
    "html": "documents.converters.html:HtmlConverter",
}
KINDS = tuple(_CONVERTERS)


def converter_for(kind: str) -> Converter:
    """The converter for a sniffed kind; ``ConversionError`` if there is none."""
    target = _CONVERTERS.get(kind)
    if target is None:
        raise ConversionError(f"no converter for files of type {kind!r}")
    module_name, class_name = target.split(":")
    return getattr(import_module(module_name), class_name)()
