"""A real Celery worker process for the tests, started and stopped on demand."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
# the web process of the production shape, as docker-compose.yml's web service runs it
GUNICORN_COMMAND = [
    sys.executable,
    "-m",
    "gunicorn",
    "-c",
    "provenance_site/gunicorn_conf.py",
    "provenance_site.wsgi:application",
]


class WorkerProcess:
    """``celery worker -B`` on the test database; ``kill()`` is a real SIGKILL."""

    def __init__(self, name: str, extra_env: dict[str, str] | None = None) -> None:
        self.name = name
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen | None = None
        ARTIFACTS.mkdir(exist_ok=True)
        from django.conf import settings

        # the test run's name (settings/test.py); the benchmarks run other settings
        run = getattr(settings, "TEST_RUN_NAME", "") or os.environ.get("PROVENANCE_DB_NAME", "")
        self.log_path = ARTIFACTS / f"worker-{name}{'-' + run if run else ''}.log"
        self.log_path.write_text("")  # restarts append; a new instance starts clean

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="provenance_site.settings.test",
            PROVENANCE_TEST_WORKER="1",
            PYTHONPATH=str(ROOT),
            HF_HUB_OFFLINE="1",
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 60) -> None:
        schedule = self.log_path.with_suffix(".beat")
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "provenance_site",
                "worker",
                "-B",
                "--schedule",
                str(schedule),
                "--concurrency",
                "2",
                "--without-mingle",
                "--without-gossip",
                "-n",
                f"{self.name}@%h",
                "-l",
                "info",
            ],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited: see {self.log_path}")
            if (
                f"{self.name}@" in self.log_path.read_text()
                and " ready." in self.log_path.read_text()
            ):
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker did not start in {timeout}s: see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process, pool children, beat)."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM to the main process, whose warm shutdown ends its pool and beat (a
        SIGTERM to the whole group hit those first, and the main process then waited
        for them until it was killed); whatever is left of the group is then killed."""
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
        if self.process:
            with contextlib.suppress(ProcessLookupError):  # the whole group is gone
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


def reset_broker_folder() -> None:
    from django.conf import settings

    folder = getattr(settings, "TEST_BROKER_DIR", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
