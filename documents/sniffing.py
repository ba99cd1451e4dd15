"""What a file is, decided from its bytes; the name's extension only refines
text (Markdown vs plain text) and must not contradict the content."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

from documents.json_limits import MAX_DOCUMENT_DEPTH, JsonTooDeep, json_loads_bounded

CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "markdown": "text/markdown; charset=utf-8",
    "text": "text/plain; charset=utf-8",
    "json": "application/json",
    "html": "text/html; charset=utf-8",
}
_EXTENSIONS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
}
_TEXT_KINDS = {"markdown", "text", "json", "html"}
# names a double click runs (Windows, macOS, shells): text under such a name is
# refused, as the download would hand it back under that name
_RUNNABLE = frozenset(
    [
        *(".exe", ".com", ".bat", ".cmd", ".msi", ".scr", ".pif", ".cpl", ".reg", ".lnk"),
        *(".ps1", ".psm1", ".vbs", ".vbe", ".js", ".jse", ".wsf", ".wsh", ".hta"),
        *(".jar", ".app", ".command", ".sh", ".apk"),
    ]
)


class UnsupportedFile(Exception):
    """The bytes are not a kind we ingest, or contradict the file's name."""


@dataclass(frozen=True)
class Sniffed:
    kind: str
    content_type: str


def _zip_kind(head: bytes, path: str | None) -> str:
    try:
        archive = zipfile.ZipFile(path) if path else zipfile.ZipFile(io.BytesIO(head))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnsupportedFile("the file is a damaged ZIP archive") from exc
    with archive:
        names = set(archive.namelist()[:10_000])
    if "mimetype" in names and any(n.startswith("META-INF/") for n in names):
        raise UnsupportedFile("EPUB/OpenDocument files are not supported")
    if "word/document.xml" in names:
        return "docx"
    if "ppt/presentation.xml" in names:
        return "pptx"
    if "xl/workbook.xml" in names:
        raise UnsupportedFile("spreadsheets (XLSX) are not supported")
    raise UnsupportedFile("ZIP archives are not supported")


def _decode_head(head: bytes) -> str:
    """UTF-8 text of ``head``; a few stray bytes (a Latin-1 "°") are tolerated."""
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(3, len(text) // 100):
        raise UnsupportedFile("the file is neither UTF-8 text nor a supported document")
    return text


def _text_kind(head: bytes, extension_kind: str | None) -> str:
    text = _decode_head(head)
    if "\x00" in text:
        raise UnsupportedFile("the file is binary data of an unsupported type")
    stripped = text.lstrip("\ufeff \t\r\n").lower()
    if stripped.startswith(("<!doctype html", "<html")):
        return "html"
    if extension_kind in _TEXT_KINDS:
        return extension_kind
    if stripped.startswith(("{", "[")) and _is_json(text):
        return "json"
    return "markdown" if stripped.startswith("#") else "text"


def _is_json(text: str) -> bool:
    """Whether ``text`` parses as JSON; one nested too deep to parse counts as JSON
    (it opens with a bracket and nests as only JSON does), so its conversion is the
    step that refuses it, with the reason, and the file stays."""
    try:
        json_loads_bounded(text, max_depth=MAX_DOCUMENT_DEPTH)
    except JsonTooDeep:
        return True
    except ValueError:
        return False
    return True


def sniff(*, head: bytes, name: str, path: str | None = None) -> Sniffed:
    """Kind of a file from its first bytes (``head``) and, for ZIPs, ``path``."""
    suffix = PurePath(name).suffix.lower()
    if suffix in _RUNNABLE:
        raise UnsupportedFile(f"files named *{suffix} are not accepted: a download would run it")
    extension_kind = _EXTENSIONS.get(suffix)
    if head.startswith(b"%PDF-") or b"%PDF-" in head[:1024]:
        kind = "pdf"
    elif head.startswith(b"PK\x03\x04"):
        kind = _zip_kind(head, path)
    else:
        kind = _text_kind(head, extension_kind)
    if (
        extension_kind
        and extension_kind != kind
        and not (extension_kind in _TEXT_KINDS and kind in _TEXT_KINDS)
    ):
        raise UnsupportedFile(
            f"the content is {kind.upper()} but the name says {extension_kind.upper()}"
        )
    return Sniffed(kind=kind, content_type=CONTENT_TYPES[kind])
