"""``make run``: start the parts in order, keep them running, stop them all.

Starts the embedded PostgreSQL (unless ``DATABASE_URL`` names a server), runs
the setup commands as the owner, starts the worker and beat, runs the demo's
setup, then starts the web server (:mod:`provenance_site.supervisor.plan`). A
child that dies is started again after a delay that doubles up to 30 s
(:class:`~provenance_site.supervisor.backoff.Backoff`), once the whole process
group of its last life is gone: beat is its own child, so there is never a second
one. SIGTERM, SIGINT or SIGHUP to the supervisor or to its process group (the
children have sessions of their own and do not see it) stops everything within
:data:`~provenance_site.supervisor.plan.STOP_BUDGET_S`: web, beat, worker and a
running command together, then the database, then any postmaster left. A repeated
signal changes nothing: ``make`` forwards the SIGTERM it gets, and Ctrl-C may be
pressed twice. If the supervisor itself is killed, the kernel signals each child
(:mod:`~provenance_site.supervisor.children`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import IO

from provenance_site.supervisor import plan
from provenance_site.supervisor.backoff import Backoff
from provenance_site.supervisor.children import POLL_S, Child, ChildSpec, stop_together
from provenance_site.supervisor.database import postmaster_stop

logger = logging.getLogger("provenance.supervisor")

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 240.0  # initdb on a first start, on a slow disk
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(Exception):
    """A stop was asked for while the parts were starting."""


class StartFailed(Exception):
    """A part could not be started: the run stops."""


class Supervisor:
    """The children of one run, started again when they die, stopped in order."""

    def __init__(self, options: plan.Options, environ: Mapping[str, str]) -> None:
        self.options = options
        self.owner_env = dict(environ)
        self.app_env = plan.app_env(options, environ)
        self.children: dict[str, Child] = {}  # kept running, in start order
        self.envs: dict[str, dict[str, str]] = {}
        self.command: Child | None = None  # the setup command running now
        self.backoff: dict[str, Backoff] = {}
        self.due: dict[str, float] = {}  # a dead child's next start
        self.stop_requested: signal.Signals | None = None

    def request_stop(self, signum: int, _frame: FrameType | None = None) -> None:
        name = signal.Signals(signum).name
        if self.stop_requested is None:
            logger.info("%s: stopping everything", name)
            self.stop_requested = signal.Signals(signum)
        else:
            logger.info("%s: already stopping", name)

    def run(self) -> int:
        """Start, watch until a stop is asked for, stop; the exit code."""
        try:
            self._start_all()
            while self.stop_requested is None:
                self.tick()
                time.sleep(POLL_S)
            return 0
        except Stopped:
            return 0
        except StartFailed as exc:
            logger.error("%s", exc)
            return 1
        finally:
            self.shutdown()

    def _start_all(self) -> None:
        o = self.options
        if o.embedded:
            self._keep(plan.database(o), self.owner_env)
            ready = o.var / "database.log"
            self._wait(lambda: _has_line(ready, "ready"), READY_TIMEOUT_S, "PostgreSQL")
        for spec in plan.setup_commands(o):
            self._run_command(spec, self.owner_env)
        self._keep(plan.worker(o), self.app_env)
        self._keep(plan.beat(o), self.app_env)
        for spec in plan.demo_commands(o):
            self._run_command(spec, self.app_env)
        logs = ", ".join(str(c.spec.log) for c in self.children.values() if c.spec.log)
        print(f"logs: {logs}", flush=True)
        self._keep(plan.web(o), self.app_env)

    def _keep(self, spec: ChildSpec, env: dict[str, str]) -> None:
        child = Child(spec)
        self.children[spec.name], self.envs[spec.name] = child, env
        child.start(env=env, cwd=self.options.root)

    def _run_command(self, spec: ChildSpec, env: dict[str, str]) -> None:
        self.command = child = Child(spec)
        child.start(env=env, cwd=self.options.root)
        self._wait(lambda: child.poll() is not None, None, spec.name)
        self.command = None
        if child.poll() != 0:
            raise StartFailed(f"{spec.name} exited with {child.poll()}: stopping")

    def _wait(self, done: Callable[[], bool], timeout: float | None, what: str) -> None:
        """Until ``done()``, keeping the children started so far running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            if self.stop_requested is not None:
                raise Stopped
            if deadline is not None and time.monotonic() > deadline:
                raise StartFailed(f"{what} was not ready after {timeout:.0f} s: stopping")
            self.tick()
            time.sleep(POLL_S)

    def tick(self) -> None:
        """Start again the children whose delay is over; schedule the newly dead."""
        now = time.monotonic()
        for name, child in self.children.items():
            if name in self.due:
                if now >= self.due[name]:
                    del self.due[name]
                    child.start(env=self.envs[name], cwd=self.options.root)
                continue
            code = child.poll()
            if code is None:
                continue
            lived = now - child.started_at
            delay = self.backoff.setdefault(name, Backoff()).delay(lived_s=lived)
            logger.warning(
                "%s exited (%s) after %.0f s: starting it again in %.0f s",
                name,
                _exit_reason(code),
                lived,
                delay,
            )
            self.due[name] = now + delay

    def shutdown(self) -> None:
        """Everything but the database together, then the database, then a
        postmaster that outlived it."""
        started = time.monotonic()
        first = [c for name, c in self.children.items() if name != "database"]
        stop_together([*first, *([self.command] if self.command else [])])
        if "database" in self.children:
            stop_together([self.children["database"]])
        if self.options.embedded:
            postmaster_stop(self.options.pgdata)
        logger.info("stopped in %.1f s", time.monotonic() - started)


def _exit_reason(code: int) -> str:
    return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"


def _has_line(path: Path, line: str) -> bool:
    try:
        return line in path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return False


def _lock(var: Path) -> IO[str] | None:
    """One supervisor per ``var/``: two would run two beats over one broker and one
    database. Held while the process lives (the kernel lets go when it dies)."""
    var.mkdir(parents=True, exist_ok=True)
    handle = (var / "supervisor.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        logger.error("another make run (pid %s) is using %s", handle.read().strip(), var)
        handle.close()
        return None
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def main() -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s supervisor %(levelname)s %(message)s"
    )
    options = plan.options_from_env(ROOT, os.environ)
    lock = _lock(options.var)
    if lock is None:
        return 2
    supervisor = Supervisor(options, os.environ)
    for signum in STOP_SIGNALS:
        signal.signal(signum, supervisor.request_stop)
    try:
        return supervisor.run()
    finally:
        lock.close()


if __name__ == "__main__":
    sys.exit(main())
