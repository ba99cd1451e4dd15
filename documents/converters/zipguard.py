"""Refuse hostile Office (ZIP) files before any parser sees them.

Checks use only the central directory's *declared* sizes, so a zip bomb is
rejected without inflating a byte; XML parts are then streamed through a
bounded read looking for DTD/ENTITY declarations (entity expansion and
external entities), which no genuine DOCX/PPTX part contains.
"""

from __future__ import annotations

import io
import re
import zipfile

from documents.converters.base import ConversionError

MIB = 1024 * 1024
_DECLARATION = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.I)
_HEAD_BYTES = 64 * 1024  # declarations must precede the root element
_XML_SUFFIXES = (".xml", ".rels", ".vml")


def _size(n: float) -> str:
    for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{int(n)} bytes"


def _open(data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ConversionError(f"corrupt file: not a readable ZIP/Office archive ({exc})") from exc


def _check_sizes(
    infos: list[zipfile.ZipInfo], max_entries: int, max_total_bytes: int, max_ratio: float
) -> None:
    if len(infos) > max_entries:
        raise ConversionError(
            f"archive has {len(infos)} entries (limit {max_entries}); refusing a possible zip bomb"
        )
    total = sum(i.file_size for i in infos)
    if total > max_total_bytes:
        raise ConversionError(
            f"archive declares {_size(total)} uncompressed (limit {_size(max_total_bytes)}); "
            "refusing a possible zip bomb"
        )
    for info in infos:
        if info.file_size > 1 * MIB and info.file_size > max_ratio * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise ConversionError(
                f"archive entry {info.filename!r} expands {ratio:.0f}x ({_size(info.file_size)}, "
                f"limit {max_ratio:.0f}x); refusing a possible zip bomb"
            )
    packed = sum(i.compress_size for i in infos)
    if total > 1 * MIB and total > max_ratio * max(packed, 1):
        raise ConversionError(
            f"archive expands {total / max(packed, 1):.0f}x overall (limit {max_ratio:.0f}x); "
            "refusing a possible zip bomb"
        )


def _check_xml(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """Read at most the part's first 64 KiB (streamed, so a bomb part never fully inflates)."""
    try:
        with archive.open(info) as stream:
            head = stream.read(_HEAD_BYTES)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError) as exc:
        raise ConversionError(
            f"corrupt file: archive part {info.filename!r} cannot be read ({exc})"
        ) from exc
    declarations_refuse(head, info.filename)


def declarations_refuse(head: bytes, part_name: str) -> None:
    """Refuse a part whose start declares a DTD or entities. ``check_zip`` runs it on
    every ``.xml``/``.rels``/``.vml`` part; converters run it on any other part they
    parse (a relationship may point at a part with any name)."""
    probe = head[:_HEAD_BYTES]
    if probe.startswith((b"\xff\xfe", b"\xfe\xff")):
        probe = probe.decode("utf-16", errors="ignore").encode("utf-8", errors="ignore")
    if _DECLARATION.search(probe):
        raise ConversionError(
            f"archive part {part_name!r} declares a DTD or XML entities; refused "
            "(entity expansion or external entities are not allowed)"
        )


def check_zip(
    data: bytes,
    *,
    max_entries: int = 10_000,
    max_total_bytes: int = 512 * MIB,
    max_ratio: float = 200,
) -> None:
    """Raise ``ConversionError`` with a readable reason if the archive looks hostile."""
    archive = _open(data)
    with archive:
        infos = archive.infolist()
        _check_sizes(infos, max_entries, max_total_bytes, max_ratio)
        for info in infos:
            if info.filename.lower().endswith(_XML_SUFFIXES):
                _check_xml(archive, info)
