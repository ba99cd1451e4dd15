"""Processes found by an environment marker: whatever a test started, however deep
(a child's children, a postmaster ``pg_ctl`` put in a session of its own) and
whoever is their parent now."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    pgid: int
    cmdline: str


def _stat(pid: str) -> tuple[str, int, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2])


def marked(name: str, value: str) -> list[Process]:
    """Live (not zombie) processes whose environment holds ``name=value``."""
    wanted = f"{name}={value}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if wanted not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        stat = _stat(pid)
        if stat is not None and stat[0] != "Z":
            found.append(Process(int(pid), stat[1], stat[2], command.strip()))
    return found


def until_none_marked(name: str, value: str, timeout: float) -> list[Process]:
    """Wait until no process carries the marker; what is left after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked(name, value)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


def kill_marked(name: str, value: str) -> None:
    """SIGKILL every process carrying the marker: a failed test's leftovers."""
    for process in marked(name, value):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
