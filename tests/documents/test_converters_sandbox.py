"""convert_isolated: child process with limits; every failure is a readable ConversionError."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from documents.converters import ConversionError, converter_for
from documents.converters.sandbox import (
    FAULT_ENV,
    LIMITS_ENV,
    convert_isolated,
    pdf_words_isolated,
)
from tests.support.corpus import CORPUS


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
def test_isolated_conversion_equals_in_process(kind: str, name: str) -> None:
    data = (CORPUS / name).read_bytes()
    assert convert_isolated(data, kind) == converter_for(kind).convert(data)


def test_timeout_stops_the_child_and_parent_survives() -> None:
    data = (CORPUS / "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf").read_bytes()
    start = time.monotonic()
    with pytest.raises(
        ConversionError, match=r"^conversion took longer than 0.001 s and was stopped$"
    ):
        convert_isolated(data, "pdf", timeout_s=0.001)
    assert time.monotonic() - start < 10
    assert convert_isolated(data, "pdf").page_count == 4  # the parent still works


def test_memory_limit_is_reported() -> None:
    data = b"[" + b",".join([b"12345"] * 3_000_000) + b"]"  # ~18 MB of JSON, far more as objects
    with pytest.raises(ConversionError, match=r"^conversion needed more than 256 MB of memory$"):
        convert_isolated(data, "json", memory_mb=256)


def test_crash_by_signal_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "segv")  # documented test-only fault hook in the child
    with pytest.raises(ConversionError, match=r"^the parser crashed \(signal 11\)$"):
        convert_isolated(b"{}", "json")


def test_conversion_errors_keep_their_reason_and_whether_retrying_can_help() -> None:
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


def test_child_never_imports_django(tmp_path: Path) -> None:
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


def test_child_converts_a_pdf_without_pymupdfs_layout_model(tmp_path: Path) -> None:
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


def _long_pdf(pages: int) -> bytes:
    """A corpus paper's pages repeated: long enough to be watched while it converts."""
    import pymupdf

    source = pymupdf.open(CORPUS / "markitdown/test_files/test.pdf")
    document = pymupdf.open()
    while document.page_count < pages:
        document.insert_pdf(source, to_page=min(source.page_count, pages - document.page_count) - 1)
    return document.tobytes()


def test_a_long_conversion_reports_its_pages_as_it_goes() -> None:
    data = _long_pdf(150)
    seen: list[tuple[int, int]] = []
    conversion = convert_isolated(
        data, "pdf", progress=lambda done, total: seen.append((done, total)), poll_s=0.02
    )
    assert conversion == converter_for("pdf").convert(data)  # the report changes nothing
    assert {total for _, total in seen} == {150}
    done = [d for d, _ in seen]
    assert done == sorted(set(done)), "each report is new and none goes back"
    assert len([d for d in done if 0 < d < 150]) >= 2, seen  # heard while converting


def test_the_pdf_converter_counts_every_page_once_in_order() -> None:
    data = (CORPUS / "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf").read_bytes()
    seen: list[tuple[int, int]] = []
    converter_for("pdf").convert(data, lambda done, total: seen.append((done, total)))
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == 3 and {t for _, t in seen} == {3}
    assert len(seen) == 6  # each page read, then each page written


def test_a_conversion_reporting_progress_still_stops_at_its_time_limit() -> None:
    start = time.monotonic()
    with pytest.raises(ConversionError, match=r"^conversion took longer than 0.5 s"):
        convert_isolated(_long_pdf(150), "pdf", timeout_s=0.5, progress=lambda *_: None)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(
    "written",
    [b"", b"12", b"7 5", b"-1 5", b"a b", b"1 2 3", b"9" * 100 + b" 1", b"\xff\xfe 3"],
)
def test_a_progress_file_the_parent_cannot_trust_is_ignored(tmp_path: Path, written: bytes) -> None:
    """The child parses hostile files: whatever it leaves in the progress file, the
    parent reads at most a few bytes and passes on only two counts that make sense."""
    from documents.converters.sandbox import _progress_read

    path = tmp_path / "progress"
    path.write_bytes(written)
    assert _progress_read(path) is None
    path.write_bytes(b"3 5")
    assert _progress_read(path) == (3, 5)
    assert _progress_read(tmp_path / "absent") is None


_forks_running_python: list[int] = []
_counting = [False]


def _count_fork() -> None:
    if _counting[0]:
        _forks_running_python.append(1)


os.register_at_fork(before=_count_fork)


def test_the_child_is_started_without_running_python_between_fork_and_exec() -> None:
    """A ``preexec_fn`` makes Python run in the forked child before exec; forked from
    a worker with other threads (OpenVINO's, the page-words reader beside the
    conversion) that child can deadlock, and the parent then waits on it for ever.
    Python calls the ``os.register_at_fork`` hooks exactly when it does that."""
    _counting[0] = True
    try:
        pdf = (CORPUS / "markitdown/test_files/test.pdf").read_bytes()
        convert_isolated(pdf, "pdf", progress=lambda *_: None)
        pdf_words_isolated(pdf)
    finally:
        _counting[0] = False
    assert _forks_running_python == []


def _sandbox_children() -> list[int]:
    me = str(os.getpid())
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            command = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        parent = next(line.split()[1] for line in text.splitlines() if line.startswith("PPid:"))
        if parent == me and b"documents.converters.sandbox" in command:
            found.append(int(status.parent.name))
    return found


def test_the_child_runs_under_its_memory_cpu_and_core_limits() -> None:
    """The limits the kernel holds for the running child, read from /proc."""
    seen: list[str] = []

    def look(done: int, total: int) -> None:
        for pid in _sandbox_children():
            with contextlib.suppress(OSError):  # it may have just exited
                seen.append(Path(f"/proc/{pid}/limits").read_text())

    data = _long_pdf(150)
    convert_isolated(data, "pdf", timeout_s=60, memory_mb=1500, progress=look, poll_s=0.02)
    assert seen, "the child was never seen running"
    limits = {line[:26].strip(): line[26:].split()[:2] for line in seen[0].splitlines()[1:]}
    assert limits["Max address space"] == [str(1500 * 1024 * 1024)] * 2
    assert limits["Max cpu time"] == ["61", "62"]
    assert limits["Max core file size"] == ["0", "0"]


def test_a_child_started_without_limits_converts_nothing(tmp_path: Path) -> None:
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    src.write_bytes(b'{"a": 1}')
    env = {k: v for k, v in os.environ.items() if k != LIMITS_ENV}
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "documents.converters.sandbox", "json", str(src), str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0 and LIMITS_ENV in proc.stderr
    assert not out.exists()
