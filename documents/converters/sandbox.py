"""Run one conversion in a child process with CPU-time and memory limits.

Parsers of hostile files can hang, balloon or crash; a child process (plain
``subprocess``, because Celery prefork workers are daemonic and may not fork
``multiprocessing`` children) bounds all three and lets the worker survive.
The child imports only the converter registry, never Django.

Child protocol: ``python -m documents.converters.sandbox KIND IN OUT [PROGRESS]``
reads the bytes from IN and writes ``{"ok": conversion}`` or ``{"error":
reason}`` JSON to OUT. KIND ``pdf-words`` answers a PDF's words page by page
instead, for boxes narrowed at the chunk stage. While it converts, the child
keeps ``done total`` (pages) in the PROGRESS file, replaced whole at most
every ``PROGRESS_WRITE_SECONDS``; the parent reads it as it waits and passes
it on (the worker shows it to the user). In a worker process the child is
forked, with the same arguments, from a server that has set the memory and
core limits and imported the converters (``... sandbox --fork-server``,
``fork_server.py``); each job's CPU-time limit is set for it, not the server.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from documents.converters import fork_server
from documents.converters.base import Conversion, ConversionError, ProgressReport

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_MEMORY = "__memory__"
# Test-only fault injection: when this variable is "segv" (or "segv:KIND" for one kind
# of child, e.g. "segv:pdf-words") the child kills itself with SIGSEGV before reading,
# so tests can prove a parser crash is reported, not fatal.
FAULT_ENV = "PROVENANCE_SANDBOX_TEST_FAULT"
LIMITS_ENV = "PROVENANCE_SANDBOX_LIMITS"  # "memory_mb cpu_seconds", set by the parent
PDF_WORDS = "pdf-words"  # not a conversion: the words of every page of a converted PDF
PROGRESS_POLL_SECONDS = 0.5  # how often the parent looks at the child's progress
PROGRESS_WRITE_SECONDS = 0.1  # how often at most the child writes it
_KIND_NAMES = {
    PDF_WORDS: "PDF",
    "pdf": "PDF",
    "docx": "DOCX",
    "pptx": "PPTX",
    "json": "JSON",
    "html": "HTML",
}


def _limits_apply(limits: str, *, cpu: bool = True) -> None:
    """The child bounds itself before it reads the file: address space, CPU time, no
    core dumps. The parent does not set them between fork and exec (``preexec_fn``):
    Python code there can deadlock a child forked from a threaded worker (OpenVINO's
    and the page-words reader's threads), and the parent then waits on it for ever.
    A fork server holds no CPU-time limit (``cpu=False``): its imports are no job's
    seconds, and under a short limit they killed it; each job's monitor sets it."""
    memory_mb, cpu_s = (int(n) for n in limits.split())
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cpu:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def convert_isolated(
    data: bytes,
    kind: str,
    *,
    timeout_s: float = 120,
    memory_mb: int = 2048,
    progress: ProgressReport | None = None,
    poll_s: float = PROGRESS_POLL_SECONDS,
) -> Conversion:
    """Convert in a child process; any failure is a ``ConversionError`` with a readable
    reason. ``progress(done, total)`` hears the child's page count every ``poll_s``
    seconds while it changes, on this thread."""
    answer = _run_child(
        data, kind, timeout_s=timeout_s, memory_mb=memory_mb, progress=progress, poll_s=poll_s
    )
    return Conversion.from_json(cast(dict[str, Any], answer))  # a conversion's JSON


def pdf_words_isolated(data: bytes, *, timeout_s: float = 120, memory_mb: int = 2048) -> bytes:
    """Every page's words (``get_text('words')`` with the converter's flags), read in
    a child process under the same limits as a conversion and packed there
    (``word_boxes.words_pack``: kept as they are between ingestion stages, unpacked
    where used). Any failure is a ``ConversionError``."""
    packed = _run_child(data, PDF_WORDS, timeout_s=timeout_s, memory_mb=memory_mb)
    return base64.b64decode(cast(str, packed))  # the packed words, base64


def _run_child(
    data: bytes,
    kind: str,
    *,
    timeout_s: float,
    memory_mb: int,
    progress: ProgressReport | None = None,
    poll_s: float = PROGRESS_POLL_SECONDS,
) -> object:
    """What the child answered as ``ok``; its error, limit or crash as ``ConversionError``."""
    timeout_text = f"{timeout_s:g}"
    env = _child_env(timeout_s, memory_mb)
    with tempfile.TemporaryDirectory(prefix="convert-") as tmp:
        src, out = Path(tmp) / "input", Path(tmp) / "output.json"
        pages = Path(tmp) / "progress"
        src.write_bytes(data)
        job = [kind, str(src), str(out), *([str(pages)] if progress else [])]
        proc = fork_server.child_start(job, Path(tmp), env, PROJECT_ROOT)
        with proc:
            try:
                stderr_bytes = _wait(proc, timeout_s, pages if progress else None, progress, poll_s)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                proc.communicate()
                raise ConversionError(
                    f"conversion took longer than {timeout_text} s and was stopped",
                    permanent=False,
                ) from exc
            except BaseException:  # the progress callback stopped it (a cancellation)
                proc.kill()
                raise
        stderr = stderr_bytes.decode("utf-8", errors="replace")
        result = None
        if out.exists() and out.stat().st_size:
            try:
                result = json.loads(out.read_text("utf-8"))
            except ValueError:
                result = None
    if result is not None and "ok" in result:
        return result["ok"]
    memory = f"conversion needed more than {memory_mb} MB of memory"
    if result is not None and "error" in result:
        if result["error"] == _MEMORY:
            raise ConversionError(memory, permanent=False)
        raise ConversionError(result["error"], permanent=result.get("permanent", True))
    code = proc.returncode
    if code == -signal.SIGXCPU:
        raise ConversionError(
            f"conversion took longer than {timeout_text} s and was stopped", permanent=False
        )
    if code == -signal.SIGKILL or any(
        m in stderr for m in ("MemoryError", "bad_alloc", "Cannot allocate memory")
    ):
        raise ConversionError(memory, permanent=False)
    if code is not None and code < 0:
        raise ConversionError(f"the parser crashed (signal {-code})", permanent=False)
    tail = stderr.strip().splitlines()[-1:] or [f"exit status {code}"]
    raise ConversionError(
        f"could not read this {_KIND_NAMES.get(kind, kind)} file: {tail[0]}", permanent=False
    )


def fork_server_start(*, timeout_s: float, memory_mb: int) -> None:
    """Fork this process's conversion children under these limits from a server
    that has imported the converters (``fork_server.py``): a worker process asks
    when it starts, so its files wait for no import."""
    fork_server.server_start(_child_env(timeout_s, memory_mb), PROJECT_ROOT)


def _child_env(timeout_s: float, memory_mb: int) -> dict[str, str]:
    # pytest renames the running test in PYTEST_CURRENT_TEST at every phase; a fork
    # server serves jobs of its own environment only, which must not change with it
    dropped = ("DJANGO_", "PYTEST_CURRENT_TEST")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["PYTHONPATH"] = str(PROJECT_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env[LIMITS_ENV] = f"{memory_mb} {max(1, int(timeout_s) + 1)}"
    return env


def _wait(
    proc: subprocess.Popen[bytes] | fork_server.ForkedChild,
    timeout_s: float,
    pages: Path | None,
    progress: ProgressReport | None,
    poll_s: float,
) -> bytes:
    """The child's stderr once it exits, passing its progress on meanwhile;
    ``TimeoutExpired`` past ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    reported = None
    while True:
        left = deadline - time.monotonic()
        try:
            _, stderr = proc.communicate(timeout=max(0.0, min(poll_s, left)) if pages else left)
            return stderr
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
        if pages is None or progress is None:
            continue
        current = _progress_read(pages)
        if current is not None and current != reported:
            progress(*current)
            reported = current


def _progress_read(pages: Path) -> tuple[int, int] | None:
    """``(done, total)`` as the child last wrote it; ``None`` before it wrote, or if
    the file holds anything but two counts (the child is untrusted)."""
    try:
        with pages.open("rb") as handle:
            done, total = (int(n) for n in handle.read(40).split())
    except (OSError, ValueError):
        return None
    return (done, total) if 0 <= done <= total else None


def _progress_writer(path: str) -> ProgressReport:
    """The child's side: the file replaced whole, so the parent never reads half of it."""
    staged, last = f"{path}.new", [0.0]

    def write(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < PROGRESS_WRITE_SECONDS:
            return
        last[0] = now
        Path(staged).write_text(f"{done} {total}", "ascii")
        os.replace(staged, path)

    return write


def _child(kind: str, src: str, out: str, pages: str | None = None) -> int:
    from documents.converters import converter_for

    if os.environ.get(FAULT_ENV) in ("segv", f"segv:{kind}"):  # every child, or one kind
        os.kill(os.getpid(), signal.SIGSEGV)
    data = Path(src).read_bytes()
    try:
        if kind == PDF_WORDS:
            from documents.word_boxes import pdf_page_words, words_pack

            payload: dict[str, object] = {
                "ok": base64.b64encode(words_pack(pdf_page_words(data))).decode("ascii")
            }
        else:
            progress = _progress_writer(pages) if pages else None
            payload = {"ok": converter_for(kind).convert(data, progress).to_json()}
    except ConversionError as exc:
        payload = {"error": exc.reason, "permanent": exc.permanent}
    except MemoryError:
        payload = {"error": _MEMORY}
    except Exception as exc:  # anything else: a readable reason, not a traceback; it may
        # be the machine's (an import failing under the memory limit): worth a retry
        payload = {
            "error": f"could not read this {_KIND_NAMES.get(kind, kind)} file: {exc}".rstrip(": "),
            "permanent": False,
        }
    Path(out).write_text(json.dumps(payload), "utf-8")
    return 0


if __name__ == "__main__":
    limits = os.environ[LIMITS_ENV]  # no limits, no conversion
    if sys.argv[1:] == [fork_server.SERVE_ARG]:  # imports once, forks a child per job
        _limits_apply(limits, cpu=False)
        fork_server.serve(_child, lambda: _limits_apply(limits))
        sys.exit(0)
    _limits_apply(limits)
    sys.exit(_child(*sys.argv[1:5]))
