"""convert_isolated: child process with limits; every failure is a readable ConversionError."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from documents.converters import ConversionError, converter_for
from documents.converters.sandbox import FAULT_ENV, convert_isolated

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("pdf", "py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf"),
        ("docx", "python-docx/par-rendered-page-breaks.docx"),
        ("pptx", "markitdown/test_files/test.pptx"),
        ("json", "markitdown/test_files/test.json"),
        ("html", "py-pdf-sample-files/015-arabic/habibi.html"),
    ],
)
def test_isolated_conversion_equals_in_process(kind, name):
    data = (CORPUS / name).read_bytes()
    assert convert_isolated(data, kind) == converter_for(kind).convert(data)


def test_timeout_stops_the_child_and_parent_survives():
    data = (CORPUS / "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf").read_bytes()
    start = time.monotonic()
    with pytest.raises(
        ConversionError, match=r"^conversion took longer than 0.001 s and was stopped$"
    ):
        convert_isolated(data, "pdf", timeout_s=0.001)
    assert time.monotonic() - start < 10
    assert convert_isolated(data, "pdf").page_count == 4  # the parent still works


def test_memory_limit_is_reported():
    data = b"[" + b",".join([b"12345"] * 3_000_000) + b"]"  # ~18 MB of JSON, far more as objects
    with pytest.raises(ConversionError, match=r"^conversion needed more than 256 MB of memory$"):
        convert_isolated(data, "json", memory_mb=256)


def test_crash_by_signal_is_reported(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "segv")  # documented test-only fault hook in the child
    with pytest.raises(ConversionError, match=r"^the parser crashed \(signal 11\)$"):
        convert_isolated(b"{}", "json")


def test_conversion_errors_keep_their_reason_and_whether_retrying_can_help():
    with pytest.raises(ConversionError, match="encrypted") as refused:
        convert_isolated(
            (CORPUS / "hostile/py-pdf/libreoffice-writer-password.pdf").read_bytes(), "pdf"
        )
    assert refused.value.permanent  # the same converter refuses the same bytes every time
    with pytest.raises(ConversionError, match=r"invalid JSON at line 1") as invalid:
        convert_isolated((CORPUS / "hostile/qpdf/truncated.json").read_bytes(), "json")
    assert invalid.value.permanent
    for limits in ({"timeout_s": 0.001}, {"memory_mb": 64}):
        with pytest.raises(ConversionError) as limited:
            convert_isolated(
                (
                    CORPUS / "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf"
                ).read_bytes(),
                "pdf",
                **limits,
            )
        assert not limited.value.permanent, limited.value.reason  # may pass with more room
    with pytest.raises(ConversionError, match="no converter"):
        convert_isolated(b"x", "exe")


def test_child_never_imports_django(tmp_path):
    """The child's code path (registry + converter) loads no Django module."""
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    src.write_bytes(b'{"a": 1}')
    code = (
        "import sys; from documents.converters.sandbox import _child; "
        f"_child('json', {str(src)!r}, {str(out)!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]"
    assert '"ok"' in out.read_text()


def test_child_converts_a_pdf_without_pymupdfs_layout_model(tmp_path):
    """pymupdf 2.0 would import its ONNX layout model on ``import pymupdf`` (~0.8 s per
    sandboxed conversion); the child converts a PDF without it, text unchanged."""
    pdf = CORPUS / "markitdown/test_files/test.pdf"
    src, out = tmp_path / "in.pdf", tmp_path / "out.json"
    src.write_bytes(pdf.read_bytes())
    code = (
        "import sys; from documents.converters.sandbox import _child; "
        f"_child('pdf', {str(src)!r}, {str(out)!r}); "
        "print(sorted(m for m in sys.modules if m.startswith(('pymupdf.layout', 'onnx'))"
        " and sys.modules[m] is not None))"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]"
    isolated = convert_isolated(pdf.read_bytes(), "pdf")
    assert isolated.markdown == converter_for("pdf").convert(pdf.read_bytes()).markdown
    assert "pymupdf" in sys.modules and sys.modules.get("pymupdf.layout") is None
