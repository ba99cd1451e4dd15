"""The MuPDF minimum (``converters/pdf/mupdf_version.py``): the installed one meets
it; an older one stops ``manage.py check`` and ``migrate`` with an error naming the
minimum and the CVE, and the conversion and page-words children refuse to parse.

An older MuPDF is played by the version PyMuPDF reports (``pymupdf.VersionFitz``,
a third-party attribute), the one the checks read."""

from __future__ import annotations

import pymupdf
import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from documents.converters.base import ConversionError
from documents.converters.pdf import PdfConverter
from documents.converters.pdf.mupdf_version import MINIMUM, mupdf_too_old
from documents.word_boxes import pdf_page_words

OLD = "1.27.2"


@pytest.fixture
def old_mupdf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pymupdf, "VersionFitz", OLD)


def _a_pdf() -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Hello")
    return doc.tobytes()


def test_the_installed_mupdf_meets_the_minimum() -> None:
    assert mupdf_too_old(pymupdf.VersionFitz) is None
    assert not [m for m in run_checks() if m.id == "documents.E001"]


@pytest.mark.parametrize(
    ("version", "allowed"), [("1.28.0", True), ("1.28.5", True), ("1.29", True), ("1.27.9", False)]
)
def test_the_minimum_is_1_28_0(version: str, allowed: bool) -> None:
    assert MINIMUM == (1, 28, 0)
    assert (mupdf_too_old(version) is None) is allowed


@pytest.mark.usefixtures("old_mupdf")
def test_an_old_mupdf_stops_the_system_check_naming_the_minimum_and_the_cve() -> None:
    [error] = [m for m in run_checks() if m.id == "documents.E001"]
    assert error.msg == (
        "MuPDF 1.27.2 (PyMuPDF's) is older than 1.28.0, the oldest allowed to parse "
        "uploads: CVE-2026-3308, a heap overflow in image loading, is fixed from 1.28.0; "
        "upgrade PyMuPDF"
    )
    with pytest.raises(SystemCheckError, match="documents.E001"):
        call_command("check")


@pytest.mark.usefixtures("old_mupdf")
def test_an_old_mupdf_parses_nothing() -> None:
    data = _a_pdf()
    for parse in (PdfConverter().convert, pdf_page_words):
        with pytest.raises(ConversionError) as refused:
            parse(data)
        assert refused.value.reason.startswith("this server cannot read PDF files safely: ")
        assert "CVE-2026-3308" in refused.value.reason
        assert not refused.value.permanent  # the same file converts once upgraded
