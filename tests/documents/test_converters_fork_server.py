"""Conversion children forked from a server that imported the converters: each
job still runs in a process of its own, under the limits, and reports its
crashes and time-outs as a cold child does; the server never outlives its
parent and serves only jobs of its own environment."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

import pytest

from documents.converters import ConversionError, converter_for, fork_server
from documents.converters.sandbox import FAULT_ENV, convert_isolated, fork_server_start
from tests.support.child_python import ROOT
from tests.support.corpus import CORPUS

PDF = CORPUS / "markitdown/test_files/test.pdf"


class _Limits(TypedDict):
    timeout_s: float
    memory_mb: int


LIMITS: _Limits = {"timeout_s": 60.0, "memory_mb": 1500}


@pytest.fixture
def server() -> Iterator[int]:
    fork_server_start(**LIMITS)
    pid = fork_server.server_pid()
    assert pid is not None
    yield pid
    fork_server.server_stop()  # this test process starts cold children again


def _parents() -> dict[int, int]:
    found = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        ppid = next(line.split()[1] for line in text.splitlines() if line.startswith("PPid:"))
        found[int(status.parent.name)] = int(ppid)
    return found


def _descendants(root: int) -> list[int]:
    parents = _parents()

    def below(pid: int) -> bool:
        while pid in parents and pid > 1:
            pid = parents[pid]
            if pid == root:
                return True
        return False

    return [pid for pid in parents if below(pid)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _long_pdf(pages: int) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for number in range(pages):
        page = doc.new_page()
        for line in range(40):
            page.insert_text((50, 60 + line * 18), f"Page {number} line {line} " * 4, fontsize=9)
    return doc.tobytes()


def test_each_job_is_a_child_forked_by_the_server_and_gone_after_it(server: int) -> None:
    seen: list[list[int]] = []
    data = _long_pdf(60)
    conversion = convert_isolated(
        data, "pdf", **LIMITS, progress=lambda *_: seen.append(_descendants(server)), poll_s=0.02
    )
    assert conversion.markdown == converter_for("pdf").convert(data).markdown
    assert any(seen), "no child of the server was seen converting"
    assert fork_server.server_pid() == server  # the same server serves the next job
    assert not any(_alive(pid) for pid in {pid for pids in seen for pid in pids})
    again = convert_isolated(PDF.read_bytes(), "pdf", **LIMITS)
    assert again.markdown == converter_for("pdf").convert(PDF.read_bytes()).markdown


def _held(pid: int) -> dict[str, list[str]]:
    text = Path(f"/proc/{pid}/limits").read_text()
    return {line[:26].strip(): line[26:].split()[:2] for line in text.splitlines()[1:]}


def test_the_forked_child_holds_the_limits(server: int) -> None:
    """The job's child itself (a grandchild of the server, below its monitor) and its
    monitor: the server holds no CPU-time limit, so the child's is set for the job."""
    seen: dict[int, dict[str, list[str]]] = {}  # pid: limits, of the server's monitors' children

    def look(done: int, total: int) -> None:
        parents = _parents()
        for pid in _descendants(server):
            if _alive(pid) and parents.get(pid) != server:
                seen[pid] = _held(pid)

    convert_isolated(_long_pdf(60), "pdf", **LIMITS, progress=look, poll_s=0.02)
    assert seen, "no job child of the server was seen converting"
    for held in seen.values():
        assert held["Max address space"] == [str(1500 * 1024 * 1024)] * 2
        assert held["Max cpu time"] == ["61", "62"]
        assert held["Max core file size"] == ["0", "0"]


def test_the_server_holds_no_cpu_limit_of_its_own() -> None:
    """Its imports are no job's seconds: under a job's limit of 1 CPU-second (a
    time-out under 1 s) a slow host's imports killed the server before any job."""
    fork_server_start(timeout_s=0.001, memory_mb=1500)
    try:
        pid = fork_server.server_pid()
        assert pid is not None
        memory = [str(1500 * 1024 * 1024)] * 2
        deadline = time.monotonic() + 30
        while (held := _held(pid))["Max address space"] != memory:  # set at its start
            assert time.monotonic() < deadline, held
            time.sleep(0.02)
        assert held["Max core file size"] == ["0", "0"]
        assert held["Max cpu time"] == ["unlimited", "unlimited"]
    finally:
        fork_server.server_stop()


def test_a_forked_childs_crash_is_reported_and_the_server_survives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(FAULT_ENV, "segv:pdf")  # the server and its children have the hook
    fork_server_start(**LIMITS)
    try:
        pid = fork_server.server_pid()
        with pytest.raises(ConversionError, match=r"^the parser crashed \(signal 11\)$"):
            convert_isolated(PDF.read_bytes(), "pdf", **LIMITS)
        assert fork_server.server_pid() == pid and _alive(pid or 0)
        html = (CORPUS / "py-pdf-sample-files/015-arabic/habibi.html").read_bytes()
        assert convert_isolated(html, "html", **LIMITS).markdown  # the next job is served
    finally:
        fork_server.server_stop()


def test_a_forked_child_past_its_time_is_stopped_and_the_server_survives() -> None:
    data = (CORPUS / "py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf").read_bytes()
    fork_server_start(timeout_s=0.001, memory_mb=1500)
    try:
        pid = fork_server.server_pid()
        start = time.monotonic()
        with pytest.raises(
            ConversionError, match=r"^conversion took longer than 0.001 s and was stopped$"
        ):
            convert_isolated(data, "pdf", timeout_s=0.001, memory_mb=1500)
        assert time.monotonic() - start < 10
        assert fork_server.server_pid() == pid and _alive(pid or 0)
    finally:
        fork_server.server_stop()


def test_a_job_of_another_environment_gets_a_cold_child(
    server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server was started without the fault hook: had it forked this job, the
    conversion would succeed; a cold child sees the hook and crashes."""
    monkeypatch.setenv(FAULT_ENV, "segv")
    with pytest.raises(ConversionError, match="crashed"):
        convert_isolated(PDF.read_bytes(), "pdf", **LIMITS)
    assert fork_server.server_pid() == server  # and the server stays for its own jobs


def test_the_server_ends_with_the_process_that_started_it() -> None:
    """A worker process killed outright leaves no server behind: it reads end of
    file on its stdin and exits."""
    script = (
        "import json, os\n"
        "from documents.converters import fork_server\n"
        "from documents.converters.sandbox import fork_server_start\n"
        "fork_server_start(timeout_s=60, memory_mb=1500)\n"
        "print(json.dumps(fork_server.server_pid()), flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -9, done.stderr[-2000:]
    pid = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(pid, int)
    deadline = time.monotonic() + 20
    while _alive(pid):
        assert time.monotonic() < deadline, f"the server {pid} outlived its parent"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_worker_processes_fork_conversions_from_a_server(celery_worker: object) -> None:
    """Each pool process of the real worker starts its server when it starts."""
    worker_pid = celery_worker.process.pid  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while not (found := _servers_under(worker_pid)):
        assert time.monotonic() < deadline, "no pool process started a fork server"
        time.sleep(0.2)
    assert all(_alive(pid) for pid in found)


def _servers_under(root: int) -> list[int]:
    found = []
    for pid in _descendants(root):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if fork_server.SERVE_ARG.encode() in command:
            found.append(pid)
    return found
