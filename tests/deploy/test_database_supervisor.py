"""The embedded PostgreSQL under `make run` is supervised: started again when it
dies, stopped when the supervisor is told to stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from tests.support.worker import ROOT

pytestmark = pytest.mark.worker


def _postmaster(data_dir: Path) -> int | None:
    pid_file = data_dir / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def _answers(data_dir: Path) -> bool:
    try:
        with psycopg.connect(host=str(data_dir), user="postgres", dbname="postgres") as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


def _until(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.25)
    return False


def test_a_killed_server_is_started_again_and_stopped_on_sigterm(tmp_path: Path) -> None:
    data_dir = tmp_path / "pgdata"
    log = (tmp_path / "supervisor.log").open("w")
    supervisor = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "provenance_site.database_supervisor",
            "--data-dir",
            str(data_dir),
            "--interval",
            "0.5",
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        assert _until(lambda: "ready" in (tmp_path / "supervisor.log").read_text(), 120)
        first = _postmaster(data_dir)
        assert first is not None and _answers(data_dir)

        os.kill(first, signal.SIGKILL)
        assert _until(lambda: _postmaster(data_dir) not in (None, first), 60), "not restarted"
        assert _until(lambda: _answers(data_dir), 30)
        assert supervisor.poll() is None

        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(90) == 0
        assert _postmaster(data_dir) is None
        assert not _answers(data_dir)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        pid = _postmaster(data_dir)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
