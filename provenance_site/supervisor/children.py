"""A supervised child: one process in a session (and process group) of its own.

Its own session, so a signal to the supervisor's process group (Ctrl-C in a
terminal, ``kill -TERM -PGID``, a container runtime stopping the group) reaches
the supervisor alone, which then stops its children in order: a Celery worker
hit at once with its pool children and its beat died half-way and left
grandchildren behind. Its own group, so "everything this child started" is one
``killpg``. And an *orphan signal* (Linux ``PR_SET_PDEATHSIG``) that the kernel
sends the child when the supervisor dies, even by SIGKILL, so no child outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

logger = logging.getLogger("provenance.supervisor")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# how long a group gets to disappear after SIGKILL (the kernel reaps it at once; the
# margin is for a loaded host)
KILL_WAIT_S = 3.0
POLL_S = 0.1

_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


@dataclass(frozen=True)
class Step:
    """One step of stopping a child: ``signal`` to its main process, then up to
    ``wait_s`` seconds for it to exit before the next step."""

    signal: signal.Signals
    wait_s: float


@dataclass(frozen=True)
class ChildSpec:
    """What to run and how to stop it. After the last step, SIGKILL to the group."""

    name: str
    argv: tuple[str, ...]
    stop: tuple[Step, ...]
    # what the child gets from the kernel when the supervisor dies: the signal that
    # stops it soonest without losing work (Celery's cold shutdown re-queues its tasks)
    orphan_signal: signal.Signals
    log: Path | None = None  # None: the supervisor's own standard output

    @property
    def stop_budget_s(self) -> float:
        """The longest this child can take to stop."""
        return sum(step.wait_s for step in self.stop) + KILL_WAIT_S


def _orphan_signal_set(signum: int, parent: int) -> Callable[[], None]:
    """Run in the child between fork and exec: the signal survives exec."""

    def set_up() -> None:
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the supervisor died before the prctl took effect
            os._exit(1)

    return set_up


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:  # gone meanwhile
            continue
        # after the command: state, ppid, pgrp
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            members.append(int(entry.name))
    return members


def group_kill(pgid: int, *, timeout: float = KILL_WAIT_S) -> bool:
    """SIGKILL every process of the group; True once none is left."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


class Child:
    """One life after another of a :class:`ChildSpec`'s process."""

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.lives = 0
        self._cleared = False  # the exited life's group was killed

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, *, env: Mapping[str, str], cwd: Path) -> None:
        """A new life; the log is emptied for the first one and appended to after."""
        log: IO[bytes] | None = None
        if self.spec.log is not None:
            log = self.spec.log.open("ab" if self.lives else "wb")
        try:
            self.process = subprocess.Popen(
                self.spec.argv,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT if log else None,
                start_new_session=True,
                # safe here: the supervisor runs one thread
                preexec_fn=_orphan_signal_set(int(self.spec.orphan_signal), os.getpid()),
            )
        finally:
            if log is not None:
                log.close()  # the child keeps its own copy
        self.started_at = time.monotonic()
        self.lives += 1
        self._cleared = False
        logger.info("%s started (pid %d)", self.spec.name, self.process.pid)

    def poll(self) -> int | None:
        """The exit code once the main process has exited and nothing it started is
        left in its group; None while it runs."""
        if self.process is None:
            return None
        code = self.process.poll()
        if code is not None and not self._cleared:
            # what a main process killed by SIGKILL leaves behind: pool children,
            # the conversion fork server
            leftovers = group_members(self.process.pid)
            if leftovers:
                logger.warning("%s exited; killing what it left: %s", self.spec.name, leftovers)
            self._cleared = group_kill(self.process.pid)
        return code if code is None or self._cleared else None

    def running(self) -> bool:
        return self.process is not None and self.poll() is None

    def signal(self, signum: signal.Signals) -> None:
        """``signum`` to the main process (its own shutdown then stops its children)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signum)


def stop_together(children: Iterable[Child]) -> None:
    """Stop ``children`` in parallel, each through its steps: a step's signal, up to
    its wait for the child to exit, the next step; SIGKILL to the group after the last.
    Returns once every one has exited and left nothing in its group (or, should
    SIGKILL not end a group, a process stuck in the kernel, once that was said)."""
    plans = {child: [*child.spec.stop, None] for child in children if child.running()}
    deadlines: dict[Child, float] = {}
    for child in plans:
        logger.info("stopping %s (pid %s)", child.spec.name, child.pid)
    while plans:
        now = time.monotonic()
        for child in list(plans):
            if not child.running():
                logger.info("%s stopped (exit %s)", child.spec.name, child.poll())
                del plans[child]
            elif now < deadlines.get(child, now):
                continue
            elif plans[child]:
                deadlines[child] = now + _next_step(child, plans[child].pop(0))
            else:
                logger.error("%s: SIGKILL left processes in its group", child.spec.name)
                del plans[child]
        if plans:
            time.sleep(POLL_S)


def _next_step(child: Child, step: Step | None) -> float:
    """Take ``step`` (None: SIGKILL to the group); how long to wait after it."""
    if step is not None:
        child.signal(step.signal)
        return step.wait_s
    assert child.process is not None
    logger.warning("%s did not stop in time: SIGKILL to its group", child.spec.name)
    group_kill(child.process.pid)
    return KILL_WAIT_S
