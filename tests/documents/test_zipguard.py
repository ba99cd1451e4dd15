"""zipguard refuses bombs from declared sizes and XML parts declaring DTDs/entities."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from documents.converters import ConversionError
from documents.converters.zipguard import check_zip
from tests.support.corpus import CORPUS


def archive(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buffer.getvalue()


def test_real_office_files_pass() -> None:
    for name in (
        "markitdown/test_files/test.docx",
        "markitdown/test_files/test.pptx",
        "docling/docx/Strict.docx",
    ):
        check_zip((CORPUS / name).read_bytes())


def test_high_ratio_entry_is_refused_quickly() -> None:
    data = archive({"word/document.xml": b"<a/>" + b"\0" * (100 * 1024 * 1024)})
    start = time.perf_counter()
    with pytest.raises(ConversionError, match=r"expands \d+x \(100.0 MB, limit 200x\)"):
        check_zip(data)
    assert time.perf_counter() - start < 1  # declared sizes only, nothing inflated


def test_total_declared_size_is_limited() -> None:
    data = archive(
        {f"part{i}.bin": b"\0" * (2 * 1024 * 1024) for i in range(3)}, zipfile.ZIP_STORED
    )
    with pytest.raises(
        ConversionError, match=r"^archive declares 6.0 MB uncompressed \(limit 4.0 MB\)"
    ):
        check_zip(data, max_total_bytes=4 * 1024 * 1024)


def test_entry_count_is_limited() -> None:
    data = archive({f"f{i}.txt": b"x" for i in range(20)})
    with pytest.raises(ConversionError, match="20 entries"):
        check_zip(data, max_entries=10)


def test_overall_ratio_is_limited() -> None:
    data = archive({f"f{i}.bin": b"\0" * (900 * 1024) for i in range(4)})
    with pytest.raises(ConversionError, match="overall"):
        check_zip(data)


@pytest.mark.parametrize(
    "xml",
    [
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><r>&b;</r>',
        b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "http://example.invalid/r.dtd"><r/>',
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY a "x">]><r/>'.encode(
            "utf-16"
        ),
    ],
)
def test_dtd_and_entities_are_refused(xml: bytes) -> None:
    with pytest.raises(ConversionError, match="declares a DTD or XML entities"):
        check_zip(archive({"[Content_Types].xml": b"<Types/>", "word/document.xml": xml}))


def test_corpus_hostile_archives() -> None:
    with pytest.raises(ConversionError, match="DTD or XML entities"):
        check_zip((CORPUS / "hostile/poi/ExternalEntityInText.docx").read_bytes())
    with pytest.raises(ConversionError, match="DTD or XML entities|zip bomb"):
        check_zip((CORPUS / "hostile/poi/poc-xmlbomb.xlsx").read_bytes())
    with pytest.raises(ConversionError, match="corrupt file"):
        check_zip((CORPUS / "hostile/poi/truncated62886.docx").read_bytes())
    with pytest.raises(ConversionError, match="corrupt file"):
        check_zip((CORPUS / "hostile/markitdown/random.bin").read_bytes())
