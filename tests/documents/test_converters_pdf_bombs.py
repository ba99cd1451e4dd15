"""PDF decompression bombs: a page whose content stream inflates to a gigabyte is
refused, before MuPDF decodes it, with a reason that names the limit; memory that
does run out is reported as the memory limit, never as a damaged file.

The bombs are made here: a Flate stream is a run of deflate blocks, so one block of
a mebibyte of zeros is compressed once and repeated (with the checksum of the whole),
which writes a 1 GiB stream in ~0.5 s instead of compressing a gigabyte.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Callable

import pymupdf
import pytest
from django.test import override_settings

from documents import ingestion
from documents.converters.base import ConversionError
from documents.converters.pdf import PdfConverter
from documents.converters.pdf.decoded import decoded_length
from documents.converters.pdf.thresholds import (
    MAX_PAGE_CONTENT_BYTES,
    MAX_STREAM_BYTES,
    MIB,
)
from documents.converters.sandbox import convert_isolated, pdf_words_isolated
from documents.models import Chunk
from documents.storage import original_open
from tests import factories

GIB_IN_MIB = 1024
# the memory the sandbox's child gets in these tests: a quarter of the default 2 GiB,
# so a bomb MuPDF decoded would be stopped by it (and say so) instead of by the cap
LOW_MEMORY_MB = 512


def _raw_deflate(data: bytes, flush: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush(flush)


def flate_bomb(prefix: bytes, zeros_mib: int, suffix: bytes) -> bytes:
    """A zlib stream of ``prefix``, ``zeros_mib`` MiB of zero bytes and ``suffix``."""
    zero = bytes(MIB)
    block = _raw_deflate(zero, zlib.Z_FULL_FLUSH)  # byte-aligned, refers to nothing before
    checksum = zlib.adler32(prefix)
    for _ in range(zeros_mib):
        checksum = zlib.adler32(zero, checksum)
    checksum = zlib.adler32(suffix, checksum)
    return b"".join(
        [
            b"\x78\xda",
            _raw_deflate(prefix, zlib.Z_FULL_FLUSH),
            block * zeros_mib,
            _raw_deflate(suffix, zlib.Z_FINISH),
            checksum.to_bytes(4, "big"),
        ]
    )


def _pdf_with_stream(stream: Callable[[str], bytes], *, as_content: bool) -> bytes:
    """One page of text, plus ``stream(font)`` (Flate; ``font``: the page font's
    resource name) as a second content stream of the page, or as that font's
    embedded font file."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Quarterly figures", fontsize=12)
    font, name = page.get_fonts()[0][0], page.get_fonts()[0][4]
    stream_bytes = stream(name)
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, stream_bytes, new=True, compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")
    if as_content:
        first = page.get_contents()[0]
        doc.xref_set_key(page.xref, "Contents", f"[{first} 0 R {xref} 0 R]")
    else:
        descriptor = doc.get_new_xref()
        doc.update_object(
            descriptor, f"<</Type/FontDescriptor/FontName/Bomb/FontFile2 {xref} 0 R>>"
        )
        doc.xref_set_key(font, "FontDescriptor", f"{descriptor} 0 R")
    data = doc.tobytes()
    doc.close()
    return data


def text_bomb(zeros_mib: int) -> bytes:
    """A page that shows one string of ``zeros_mib`` MiB: MuPDF's lexer holds the
    whole string token, and the text pass makes a glyph of each byte."""
    return _pdf_with_stream(
        lambda font: flate_bomb(f"BT /{font} 12 Tf 72 700 Td (".encode(), zeros_mib, b") Tj ET"),
        as_content=True,
    )


def test_the_bomb_is_what_it_claims() -> None:
    stream = flate_bomb(b"(", 64, b")")
    assert len(stream) < 100_000
    assert len(zlib.decompress(stream)) == 64 * MIB + 2  # checksum and all


def test_a_gigabyte_content_stream_is_refused_naming_the_page_limit() -> None:
    data = text_bomb(GIB_IN_MIB)
    assert len(data) < 2 * MIB
    with pytest.raises(ConversionError) as refused:
        PdfConverter().convert(data)
    limit = f"{MAX_PAGE_CONTENT_BYTES // MIB} MB"
    assert refused.value.reason == (
        f"this PDF is too large to convert: page 1 decodes to more than {limit} of "
        "content (the limit per page)"
    )
    assert refused.value.permanent  # the same bytes are refused every time


def test_a_huge_embedded_font_is_refused_naming_the_stream_limit() -> None:
    size_mib = 2 * MAX_STREAM_BYTES // MIB
    data = _pdf_with_stream(lambda _: flate_bomb(b"", size_mib, b""), as_content=False)
    with pytest.raises(ConversionError, match=r"more than 64 MB \(the limit per stream\)"):
        PdfConverter().convert(data)


def test_a_page_just_under_the_limit_converts() -> None:
    data = text_bomb(MAX_PAGE_CONTENT_BYTES // MIB - 1)
    assert PdfConverter().convert(data).markdown.startswith("Quarterly figures")


@pytest.mark.parametrize("filters", [["FlateDecode", "FlateDecode"], ["Fl", "DCTDecode"]])
def test_decoded_length_stops_past_the_cap_through_a_chain(filters: list[str]) -> None:
    inner = flate_bomb(b"", 8, b"")
    stream = zlib.compress(inner) if filters[1] != "DCTDecode" else inner
    expected = 8 * MIB if filters[1] != "DCTDecode" else 8 * MIB  # images end the chain
    assert decoded_length(stream, filters, cap=4 * MIB) == 4 * MIB + 1
    assert decoded_length(stream, filters, cap=16 * MIB) == expected


def test_decoded_length_of_the_other_filters() -> None:
    text = b"BT (Hello) Tj ET"
    assert decoded_length(text.hex().encode() + b">", ["ASCIIHexDecode"], cap=100) == len(text)
    assert decoded_length(b"\x7f" + b"a" * 128 + b"\x81" + b"z" + b"\x80", ["RL"], cap=10**6) == (
        128 + 128
    )
    cut = zlib.compress(bytes(range(256)) * 64)[:200]  # a damaged stream: what came before
    assert 0 < decoded_length(cut, ["FlateDecode"], cap=10**6) < 256 * 64
    assert decoded_length(b"\xff" * 40, ["FlateDecode"], cap=100) == 0  # no deflate at all


@pytest.mark.django_db
def test_an_uploaded_bomb_fails_readably_under_a_quarter_of_the_memory_and_keeps_its_bytes() -> (
    None
):
    """The conversion child runs under a quarter of the default memory limit: had
    MuPDF decoded the gigabyte, the child would have been stopped by that limit
    (and said so) instead of refusing the page by its cap."""
    data = text_bomb(GIB_IN_MIB)
    record = factories.upload(factories.data_source(), "bomb.pdf", data).file  # not queued
    with override_settings(PROVENANCE_CONVERT_MEMORY_MB=LOW_MEMORY_MB):
        assert ingestion.file_convert(file_id=str(record.pk)) is False
    record.refresh_from_db()
    assert record.status == "failed"
    assert re.fullmatch(
        r"this PDF is too large to convert: page 1 decodes to more than \d+ MB of content "
        r"\(the limit per page\)",
        record.error_message,
    ), record.error_message
    assert not record.markdowns.exists() and not Chunk.objects.filter(file=record).exists()
    with original_open(record.storage_key) as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == record.sha256


def test_the_page_words_child_refuses_the_bomb_too_under_a_quarter_of_the_memory() -> None:
    """The boxes' reader runs beside the conversion on the same bytes."""
    with pytest.raises(ConversionError, match=r"page 1 decodes to more than 16 MB"):
        pdf_words_isolated(text_bomb(GIB_IN_MIB), memory_mb=LOW_MEMORY_MB)


def test_memory_running_out_is_the_memory_limit_not_a_damaged_file() -> None:
    """A page under the cap whose text pass needs more memory than the child has:
    MuPDF's failed allocation is reported as the memory limit."""
    data = text_bomb(MAX_PAGE_CONTENT_BYTES // MIB - 1)
    with pytest.raises(ConversionError) as stopped:
        convert_isolated(data, "pdf", memory_mb=320)
    assert stopped.value.reason == "conversion needed more than 320 MB of memory"
    assert not stopped.value.permanent  # another try, with more memory, may pass
