"""The supervisor's parts on small real processes: a child's session and group of
its own, its stop steps ending in SIGKILL to the whole group, a dead child's
leftovers, the kernel's signal when the supervisor dies, the restart delays, the
stop budget, one supervisor per var/ folder."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from provenance_site.supervisor import plan
from provenance_site.supervisor.backoff import Backoff
from provenance_site.supervisor.children import (
    KILL_WAIT_S,
    Child,
    ChildSpec,
    Step,
    group_members,
    stop_together,
)
from tests.support.processes import kill_marked, marked, until_none_marked
from tests.support.worker import ROOT

MARKER = "PROVENANCE_TEST_CHILD_MARKER"

# a process that ignores SIGTERM, starts a grandchild in its group, says so, and waits
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(grandchild.pid, flush=True)
time.sleep(120)
"""


def _spec(tmp_path: Path, code: str, **overrides: object) -> ChildSpec:
    fields: dict = {
        "name": "stub",
        "argv": (sys.executable, "-c", code),
        "stop": (Step(signal.SIGTERM, 0.5),),
        "orphan_signal": signal.SIGTERM,
        "log": tmp_path / "stub.log",
    }
    fields.update(overrides)
    return ChildSpec(**fields)


def _env(marker: str) -> dict[str, str]:
    return {**os.environ, MARKER: marker}


def _grandchild(tmp_path: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = (tmp_path / "stub.log").read_text()
        if text.strip():
            return int(text.split()[0])
        time.sleep(0.05)
    raise AssertionError("the child did not start its grandchild")


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    kill_marked(MARKER, value)


def test_a_child_has_a_session_and_group_of_its_own(tmp_path: Path, marker: str) -> None:
    child = Child(_spec(tmp_path, STUBBORN))
    child.start(env=_env(marker), cwd=tmp_path)
    assert child.pid is not None
    # a signal to the supervisor's group (Ctrl-C, kill -TERM -PGID) does not reach it
    assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
    assert os.getsid(child.pid) == child.pid != os.getsid(0)
    grandchild = _grandchild(tmp_path)
    assert set(group_members(child.pid)) == {child.pid, grandchild}


def test_a_child_that_ignores_sigterm_is_killed_with_its_group_after_its_steps(
    tmp_path: Path, marker: str
) -> None:
    child = Child(_spec(tmp_path, STUBBORN, stop=(Step(signal.SIGTERM, 1.0),)))
    child.start(env=_env(marker), cwd=tmp_path)
    _grandchild(tmp_path)
    started = time.monotonic()
    stop_together([child])
    took = time.monotonic() - started
    assert 1.0 <= took < 1.0 + KILL_WAIT_S + 2, took
    assert child.poll() == -signal.SIGKILL
    assert group_members(child.pid or 0) == []
    assert marked(MARKER, marker) == []


def test_a_child_that_stops_on_its_first_step_is_not_killed(tmp_path: Path, marker: str) -> None:
    code = "import time; print('up', flush=True); time.sleep(120)"
    child = Child(_spec(tmp_path, code, stop=(Step(signal.SIGTERM, 20.0),)))
    child.start(env=_env(marker), cwd=tmp_path)
    _grandchild_free_start(tmp_path)
    started = time.monotonic()
    stop_together([child])
    assert time.monotonic() - started < 10
    assert child.poll() == -signal.SIGTERM


def _grandchild_free_start(tmp_path: Path) -> None:
    deadline = time.monotonic() + 30
    while "up" not in (tmp_path / "stub.log").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_dead_childs_leftovers_are_killed_before_it_counts_as_exited(
    tmp_path: Path, marker: str
) -> None:
    child = Child(_spec(tmp_path, STUBBORN))
    child.start(env=_env(marker), cwd=tmp_path)
    grandchild = _grandchild(tmp_path)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)  # as the probe killed the worker's main process
    deadline = time.monotonic() + 10
    while child.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert child.poll() == -signal.SIGKILL
    assert grandchild not in {p.pid for p in marked(MARKER, marker)}
    assert group_members(child.pid) == []


# a supervisor that starts one child, which reports the signal it gets, and waits
SUPERVISOR = """
import os, signal, sys, time
from pathlib import Path
from provenance_site.supervisor.children import Child, ChildSpec, Step
report = Path(sys.argv[1])
code = (
    "import signal, sys, time\\n"
    "def got(signum, _):\\n"
    f"    open({str(report)!r}, 'w').write(signal.Signals(signum).name)\\n"
    "    sys.exit(0)\\n"
    "signal.signal(signal.SIGQUIT, got)\\n"
    "print('up', flush=True)\\n"
    "time.sleep(120)\\n"
)
spec = ChildSpec(name="orphan", argv=(sys.executable, "-c", code), stop=(),
                 orphan_signal=signal.SIGQUIT, log=report.with_suffix(".log"))
child = Child(spec)
child.start(env=dict(os.environ), cwd=Path.cwd())
time.sleep(120)
"""


def test_a_child_gets_its_orphan_signal_when_the_supervisor_is_killed(
    tmp_path: Path, marker: str
) -> None:
    report = tmp_path / "report"
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(report)],
        cwd=ROOT,
        env={**_env(marker), "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    log = report.with_suffix(".log")
    while not (log.exists() and "up" in log.read_text()):
        assert time.monotonic() < deadline and supervisor.poll() is None
        time.sleep(0.05)
    supervisor.kill()
    supervisor.wait(10)
    assert until_none_marked(MARKER, marker, 10) == []
    assert report.read_text() == "SIGQUIT"


def test_restart_delays_double_up_to_a_ceiling_and_start_over_after_a_settled_life() -> None:
    backoff = Backoff(first_s=1, ceiling_s=8, settled_s=60)
    assert [backoff.delay(lived_s=2) for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    assert backoff.delay(lived_s=60) == 1  # it ran for a minute: a new failure
    assert backoff.delay(lived_s=0.5) == 2


def test_a_stop_fits_in_the_budget_a_process_manager_is_told(tmp_path: Path) -> None:
    options = plan.Options(
        root=ROOT, var=tmp_path, port="8000", demo=True, database_url="", app_database_url=""
    )
    assert plan.stop_budget_s(options) <= plan.STOP_BUDGET_S
    # beat runs as its own child, never inside a worker
    assert "-B" not in plan.worker(options).argv
    assert "beat" in plan.beat(options).argv


def _supervisor(var: Path, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = ("PROVENANCE_", "DJANGO_", "DATABASE_URL")
    return subprocess.run(
        [sys.executable, "-m", "provenance_site.supervisor"],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith(inherited)},
            "PROVENANCE_VAR_DIR": str(var),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_second_supervisor_on_the_same_var_folder_refuses_to_start(tmp_path: Path) -> None:
    with (tmp_path / "supervisor.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running supervisor holds it
        lock.write("4242\n")
        lock.flush()
        done = _supervisor(tmp_path)
    assert done.returncode == 2, done.stderr
    assert "another make run (pid 4242)" in done.stderr
    assert not (tmp_path / "database.log").exists()  # nothing was started


def test_a_malformed_demo_switch_stops_start_up_naming_it(tmp_path: Path) -> None:
    done = _supervisor(tmp_path, PROVENANCE_RUN_DEMO="maybe")
    assert done.returncode != 0
    assert "PROVENANCE_RUN_DEMO='maybe' is not a boolean" in done.stderr
    assert not (tmp_path / "database.log").exists()
