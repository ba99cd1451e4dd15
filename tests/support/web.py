"""gunicorn as production runs it (``GUNICORN_COMMAND``), started by a test on the
settings and environment it names, for what only a server of several processes and
threads shows: races between requests, a database that is gone."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.support.net import free_port
from tests.support.worker import ARTIFACTS, GUNICORN_COMMAND, ROOT

START_TIMEOUT_S = 90  # a loaded 2-core host imports Django in two processes at once


@contextmanager
def gunicorn_serving(name: str, env: dict[str, str], *, workers: int = 2) -> Iterator[str]:
    """The base URL of gunicorn on the test database (as the suite's Celery worker
    finds it), ``env`` on top; stopped on leaving. Its log is
    ``test-artifacts/gunicorn-NAME.log``."""
    port = free_port()
    full_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "provenance_site.settings.test",
        "PROVENANCE_TEST_WORKER": "1",  # the database pytest-django made (settings/test.py)
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "PORT": str(port),
        "WEB_CONCURRENCY": str(workers),
        "GUNICORN_THREADS": "4",
        "PROVENANCE_WARM_EMBEDDER": "0",
        **env,
    }
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / f"gunicorn-{name}.log"
    with log_path.open("w") as log:  # the child keeps its own copy of the handle
        web = subprocess.Popen(
            GUNICORN_COMMAND, cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base, web, log_path)
        yield base
    finally:
        web.terminate()
        try:
            web.wait(30)
        except subprocess.TimeoutExpired:
            web.kill()
            web.wait(10)


def wait_until_serving(base: str, web: subprocess.Popen, log_path: Path) -> None:
    """Until the login page answers (it reads nothing from the database)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert web.poll() is None, log_path.read_text()[-3000:]
        try:
            requests.get(f"{base}/accounts/login/", timeout=30)
            return
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.5)
    raise AssertionError(f"gunicorn did not start: see {log_path}")
