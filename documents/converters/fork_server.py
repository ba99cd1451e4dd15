"""Conversion children forked from a process that has imported the converters.

A fresh child per conversion is the sandbox's isolation, but importing PyMuPDF
in it took 0.56 s of a 100-page PDF's 0.87 s conversion (AMD EPYC Zen 5), and
as much CPU again for the page-words child beside it, for every upload. So a
worker process (``PROVENANCE_CONVERT_FORK_SERVER``, on by default; ~150 MB)
keeps one *fork server*: a child that set the sandbox's memory and core limits,
imported every converter, and never reads a file itself. For each job it forks a
monitor, which sets the CPU-time limit, forks the job's child and writes that
child's pid and, once it ends, its exit status into the job's folder; the
child's stderr goes to a file there. The job's child inherits the limits (with
its own CPU-time count, as the kernel keeps one per process) and a copy of a
process that has read no other file. The server holds no CPU-time limit of its
own: its imports (~1 s of CPU on a slow host, more where no bytecode is on
disk) would count against a job's seconds, and a short limit killed it.
Any other process, or a job whose environment differs from the server's (the
test fault hook, a CPUID mask), starts a cold child instead.

The server exits at end of file on stdin, so it never outlives its worker
process, and is replaced after ``JOBS_PER_SERVER`` jobs, so nothing it
accumulates grows without bound.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

SERVE_ARG = "--fork-server"  # argv of the server child
MODULE = "documents.converters.sandbox"
JOBS_PER_SERVER = 1000
FORK_WAIT_S = 5.0  # the server answers a job with its child's pid within this
_POLL_S = 0.005  # how often the parent looks for the child's exit status

_lock = threading.Lock()


class _Server:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.jobs = proc, 0


# the environment servers are started with (None: this process keeps none), its
# folder, and the running server
_conf: dict[str, dict[str, str] | Path | None] = {"env": None, "cwd": None}
_running: list[_Server] = []


def server_start(env: dict[str, str], cwd: Path) -> None:
    """From now on this process forks its conversion children from a server of
    this environment (started now, and again whenever it is gone)."""
    with _lock:
        _replace(None)
        _conf.update(env=env, cwd=cwd)
        _ensure()


def server_stop() -> None:
    """Back to a cold child per job (and no server) in this process."""
    with _lock:
        _conf.update(env=None, cwd=None)
        _replace(None)


def server_pid() -> int | None:
    """The running server's process id, if this process keeps one."""
    with _lock:
        alive = [s.proc.pid for s in _running if s.proc.poll() is None]
    return alive[0] if alive else None


def child_start(
    job: list[str], folder: Path, env: dict[str, str], cwd: Path
) -> subprocess.Popen[bytes] | ForkedChild:
    """The child running ``job`` (``KIND IN OUT [PROGRESS]``): forked by this
    process's server, or started cold where it keeps none for this environment."""
    return _forked(job, folder, env) or _popen(job, env, cwd, server=False)


def _forked(job: list[str], folder: Path, env: dict[str, str]) -> ForkedChild | None:
    with _lock:
        wanted = _conf["env"]
        if not isinstance(wanted, dict) or env != wanted:
            return None
        server = _ensure()
        request = json.dumps({"job": job, "folder": str(folder)}).encode() + b"\n"
        try:
            assert server.proc.stdin is not None
            server.proc.stdin.write(request)
            server.proc.stdin.flush()
        except OSError:  # it died: this job starts cold, the next gets a new server
            _replace(None)
            return None
        server.jobs += 1
    child = ForkedChild(folder)
    return child if child.started(FORK_WAIT_S, server.proc) else None


class ForkedChild:
    """The parts of ``subprocess.Popen`` the sandbox uses, for a forked job child:
    its pid and exit status come from files the monitor writes in the job's folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pid = 0
        self.returncode: int | None = None

    def started(self, within_s: float, server: subprocess.Popen[bytes]) -> bool:
        deadline = time.monotonic() + within_s
        while not (self.folder / "pid").exists():
            if time.monotonic() > deadline or server.poll() is not None:
                return False
            time.sleep(0.001)
        self.pid = int((self.folder / "pid").read_text())
        return True

    def poll(self) -> int | None:
        if self.returncode is None and (status := self.folder / "status").exists():
            self.returncode = int(status.read_text())
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[None, bytes]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(MODULE, timeout or 0)
            time.sleep(_POLL_S)
        stderr = self.folder / "stderr"
        return None, stderr.read_bytes() if stderr.exists() else b""

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(self.pid, signal.SIGKILL)

    def __enter__(self) -> ForkedChild:
        return self

    def __exit__(self, *_: object) -> None:
        if self.poll() is None:  # left running by an error: stop it, then wait
            self.kill()
            self.communicate(timeout=10)


def serve(child: Callable[..., int], job_limits: Callable[[], None]) -> None:
    """The server's side: import every converter, then fork a monitor per job read
    from stdin until end of file; ``job_limits`` bounds each monitor and the job's
    child it forks."""
    from documents.converters import KINDS, converter_for

    for kind in KINDS:
        converter_for(kind)
    import documents.word_boxes  # noqa: F401 - the page-words reader's PyMuPDF use

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the monitors
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if os.fork() == 0:
            _monitor(child, job_limits, request["job"], Path(request["folder"]))


def _monitor(
    child: Callable[..., int], job_limits: Callable[[], None], job: list[str], folder: Path
) -> None:
    """Fork the job's child under ``job_limits``, then record its pid and exit status
    in ``folder``."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    job_limits()  # a forked process's CPU time starts at nothing: the job's own count
    pid = os.fork()
    if pid == 0:
        _job_run(child, job, folder)
    _write(folder / "pid", str(pid))
    _, status = os.waitpid(pid, 0)
    _write(folder / "status", str(os.waitstatus_to_exitcode(status)))
    os._exit(0)


def _job_run(child: Callable[..., int], job: list[str], folder: Path) -> None:
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(os.open(folder / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
        code = child(*job)
    except BaseException:  # the parent reads it from stderr
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _write(path: Path, text: str) -> None:
    staged = path.with_name(path.name + ".new")
    staged.write_text(text, "ascii")
    os.replace(staged, path)  # the parent never reads half of it


def _ensure() -> _Server:
    """The running server, started anew if it is gone or has served its jobs
    (the caller holds the lock)."""
    if _running and _running[0].proc.poll() is None and _running[0].jobs < JOBS_PER_SERVER:
        return _running[0]
    env, cwd = _conf["env"], _conf["cwd"]
    assert isinstance(env, dict) and isinstance(cwd, Path)
    _replace(_Server(_popen([SERVE_ARG], env, cwd, server=True)))
    return _running[0]


def _popen(
    args: list[str], env: dict[str, str], cwd: Path, *, server: bool
) -> subprocess.Popen[bytes]:
    """``python -m documents.converters.sandbox ARGS``: a server reads jobs on its
    stdin; a cold child's stderr holds the reasons its parent reads."""
    return subprocess.Popen(
        [sys.executable, "-m", MODULE, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if server else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if server else subprocess.PIPE,
    )


def _replace(new: _Server | None) -> None:
    """Stop the running server, if any: end of file on its stdin (jobs it forked
    finish on their own), killed if it has not exited 5 s later."""
    while _running:
        old = _running.pop()
        if old.proc.stdin is not None:
            old.proc.stdin.close()
        try:
            old.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            old.proc.kill()
            old.proc.wait()
    if new is not None:
        _running.append(new)


atexit.register(server_stop)
