"""Uploads, conversion with a location map, chunking and the ingestion pipeline."""

import sys

# pymupdf 2.0 imports pymupdf4llm and its layout model (pymupdf.layout, ONNX Runtime)
# on ``import pymupdf`` whenever they are installed, and pymupdf itself requires them:
# a large share of a fresh process's start-up. Nothing here uses them (we read
# get_text("dict") ourselves, never Page.get_layout() or pymupdf.to_markdown()), so
# they are kept out: every sandboxed conversion runs in a fresh process that would
# otherwise pay for them.
for _unused in ("pymupdf.layout", "pymupdf4llm"):
    sys.modules.setdefault(_unused, None)  # type: ignore[arg-type]
