"""Golden snapshots of the corpus conversions: what users get, as files to compare.

Each corpus PDF, DOCX and PPTX is sniffed from its head as an upload is, then
converted in the sandbox child as ingestion converts it, so the snapshot is
what a user of that document gets. A converted document has two files under
``tests/golden/corpus/`` named by its corpus path: ``<path>.md``, the Markdown
byte for byte, and ``<path>.json``, everything else the conversion returns (the
location map). A document refused at upload or at conversion has only the
JSON, holding the stage and the reason the user is shown.

The JSON is written to diff well and to be the same on every run: keys sorted,
one span or page run per line, floats rounded to ``DECIMALS`` places (PDF boxes
to 0.01 pt), ``line_pages`` as runs ``[first line, last line, page]`` (lines
1-indexed), ``spans`` as ``[char_start, char_end, page, x0, y0, x1, y1]``.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import cast

from documents.converters import Conversion, ConversionError
from documents.converters.sandbox import convert_isolated
from documents.sniffing import UnsupportedFile, sniff
from tests.support.corpus import CORPUS, nonempty

SNAPSHOTS = Path(__file__).resolve().parent / "corpus"
SUFFIXES = (".docx", ".pdf", ".pptx")
REGENERATE = ".venv/bin/python -m tests.golden.regenerate"
# the head an upload is sniffed from (documents.uploads reads as many bytes)
SNIFF_BYTES = 8192
DECIMALS = 2  # floats (PDF boxes in points, font sizes) are kept to 0.01
# sandbox children converting at once: one per core of a small machine
WORKERS = 2


@dataclass(frozen=True)
class Snapshot:
    """One corpus document's snapshot: its location map (JSON text) and Markdown,
    ``None`` when the document is refused."""

    document: str  # its path in the corpus
    locations: str
    markdown: str | None

    def files(self) -> dict[Path, str]:
        """The snapshot's files and the text each holds."""
        base = SNAPSHOTS / self.document
        files = {base.with_name(base.name + ".json"): self.locations}
        if self.markdown is not None:
            files[base.with_name(base.name + ".md")] = self.markdown
        return files


def corpus_documents() -> list[str]:
    """Every PDF, DOCX and PPTX of the corpus, as paths relative to it, sorted;
    never empty (a missing corpus would leave nothing to compare)."""
    documents = sorted(
        path.relative_to(CORPUS).as_posix()
        for path in CORPUS.rglob("*")
        if path.suffix.lower() in SUFFIXES and path.is_file()
    )
    return nonempty(documents, "PDF, DOCX or PPTX files in the corpus")


def snapshot_take(document: str) -> Snapshot:
    """Sniff and convert one corpus document as an upload of it would be."""
    path = CORPUS / document
    data = path.read_bytes()
    try:
        kind = sniff(head=data[:SNIFF_BYTES], name=PurePath(document).name, path=str(path)).kind
    except UnsupportedFile as exc:
        refused = {"refused": {"stage": "upload", "reason": str(exc)}}
        return Snapshot(document, json_text(refused), None)
    try:
        conversion = convert_isolated(data, kind)
    except ConversionError as exc:
        refusal = {"stage": "conversion", "reason": exc.reason, "permanent": exc.permanent}
        return Snapshot(document, json_text({"kind": kind, "refused": refusal}), None)
    return Snapshot(document, json_text(locations(kind, conversion)), conversion.markdown)


def snapshots_take(documents: list[str], workers: int = WORKERS) -> list[Snapshot]:
    """The snapshots of ``documents``, in their order; each conversion is a child
    process of its own, so a thread per core keeps the cores busy."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(snapshot_take, documents))


def snapshot_files_stored() -> set[Path]:
    """Every snapshot file on disk, to find those whose document is gone."""
    return {path for path in SNAPSHOTS.rglob("*") if path.is_file()}


def locations(kind: str, conversion: Conversion) -> dict[str, object]:
    """All a conversion returns but its Markdown, in the snapshot's stable form."""
    data = conversion.to_json()
    del data["markdown"]
    data["kind"] = kind
    data["line_pages"] = page_runs(conversion.line_pages)
    return cast(dict[str, object], rounded(data))


def page_runs(line_pages: list[int | None]) -> list[list[int | None]]:
    """``line_pages`` as ``[first line, last line, page]`` runs of equal pages."""
    runs: list[list[int | None]] = []
    for number, page in enumerate(line_pages, start=1):
        if runs and runs[-1][2] == page:
            runs[-1][1] = number
        else:
            runs.append([number, number, page])
    return runs


def rounded(value: object) -> object:
    """``value`` with every float rounded to ``DECIMALS`` (and no ``-0.0``), tuples
    as lists: the same text on every run and every machine."""
    if isinstance(value, float):
        return round(value, DECIMALS) + 0.0
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    return value


def json_text(value: object) -> str:
    """JSON with sorted keys, a line per key and per inner list (a span, a page
    run), lists of plain values on one line, and a final newline."""
    return _json(value, 0) + "\n"


def _json(value: object, depth: int) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict) and value:
        items = [
            f"{inner}{json.dumps(key)}: {_json(item, depth + 1)}"
            for key, item in sorted(value.items())
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(item, list | dict) for item in value):
        items = [inner + _json(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
