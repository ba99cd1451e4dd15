"""docker-compose.yml run for real: the stack started from the image, a file
uploaded through the REST API, ingested by a worker container, answered with a
quoted source, downloaded byte for byte, and the audit chain verified.

    python scripts/docker_smoke.py FILE "QUESTION" [--standins] [--keep]

``--standins`` starts the database and broker from the images
``scripts/docker-standins/build.sh`` makes (a host without Docker Hub). The
application image must exist (``docker build -t provenance:latest .``). Exits 0
only when every step held; prints each step with its time.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import requests

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
BASE = "http://127.0.0.1:8000"
PROJECT = "provenance-smoke"


def compose_command(standins: bool) -> list[str]:
    """``docker compose`` (v2) where installed, else ``docker-compose`` (v1)."""
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    command = ["docker", "compose"] if v2 else [shutil.which("docker-compose") or "docker-compose"]
    files = ["-f", str(ROOT / "docker-compose.yml")]
    if standins:
        files += ["-f", str(ROOT / "scripts/docker-standins/compose.yml")]
    return [*command, "-p", PROJECT, *files]


def request(
    method: str,
    path: str,
    key: str = "",
    *,
    json_body: dict | None = None,
    files: dict | None = None,
    data: dict | None = None,
) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.request(
        method, f"{BASE}{path}", headers=headers, json=json_body, files=files, data=data, timeout=60
    )


class Smoke:
    def __init__(self, compose: list[str], env: dict[str, str]) -> None:
        self.compose, self.env, self.started = compose, env, time.monotonic()

    def step(self, what: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f} s] {what}", flush=True)

    def run(self, *args: str, capture: bool = False) -> str:
        done = subprocess.run(
            [*self.compose, *args], env=self.env, cwd=ROOT, text=True, capture_output=capture
        )
        if done.returncode:
            raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr or ''}")
        return done.stdout or ""

    def until(
        self, what: str, check: Callable[[], T | None], timeout: float, every: float = 1
    ) -> T:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(every)
        raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")


def healthy() -> bool:
    try:
        return request("GET", "/healthz").status_code == 200
    except requests.RequestException:
        return False


def ready(key: str, file_id: str) -> Callable[[], dict | None]:
    """A check for :meth:`Smoke.until`: the file's status once it is ready (a failed
    file stops the smoke with its reason)."""

    def check() -> dict | None:
        state = request("GET", f"/v1/flow/files/{file_id}", key).json()
        assert state["status"] != "failed", state["error_message"]
        return state if state["status"] == "ready" else None

    return check


def manual(paragraphs: int) -> bytes:
    """A long Markdown file: enough chunks for several embedding batches."""
    lines = ["# Field manual", ""]
    for n in range(paragraphs):
        lines += [
            f"## Procedure {n}",
            "",
            f"Procedure {n} inspects valve {n * 7 % 101} of pump station {n % 13} every "
            f"{n % 9 + 2} weeks and records the pressure reading and the seal condition in "
            f"the maintenance log. Deviations above {n % 5 + 3} percent are reported.",
            "",
        ]
    return "\n".join(lines).encode()


# the file's chunks, positions and vectors (psql -c does not bind parameters: the id
# is parsed as a UUID before it is put in)
CHUNK_COUNTS = (
    "SELECT count(*), count(DISTINCT position), count(embedding) FROM documents_chunk "
    "WHERE file_id = '{file_id}'"
)


def kill_a_worker_mid_embedding(smoke: Smoke, key: str) -> None:
    """A long file uploaded; the worker container embedding it killed (SIGKILL) once
    its first batch is stored; the other finishes it: one chunk per position, each
    embedded, nothing twice."""
    response = request(
        "POST",
        "/v1/flow/files",
        key,
        files={"file": ("manual.md", manual(4000))},
        data={"data_source": "Handbook"},
    )
    assert response.status_code == 202, response.text[:500]
    file_id = response.json()["file_id"]

    def embedding() -> dict | None:
        state = request("GET", f"/v1/flow/files/{file_id}", key).json()
        assert state["status"] not in ("ready", "failed"), f"{state['status']} before the kill"
        progress = state.get("progress") or {}
        done, total = progress.get("done", 0), progress.get("total", 0)
        return state if state["status"] == "embedding" and 0 < done < total / 2 else None

    state = smoke.until("the manual's first embedded batch", embedding, 600, every=0.2)
    progress = state["progress"]
    total = progress["total"]
    workers = smoke.run("ps", "-q", "worker", capture=True).split()
    assert len(workers) == 2, workers
    logs = {
        worker: subprocess.run(
            ["docker", "logs", worker], capture_output=True, text=True
        ).stderr.count(f"chunks of {file_id}")
        for worker in workers
    }
    victim = max(logs, key=lambda worker: logs[worker])
    subprocess.run(["docker", "kill", "--signal", "KILL", victim], check=True, capture_output=True)
    smoke.step(
        f"manual.md: {total} chunks; killed worker {victim[:12]} at {progress} "
        f"(batches of it in each worker's log: {sorted(logs.values())})"
    )

    state = smoke.until("the other worker to finish the manual", ready(key, file_id), 600)
    counts = smoke.run(
        "exec",
        "-T",
        "db",
        "psql",
        "-U",
        "provenance",
        "-d",
        "provenance",
        "-tAc",
        CHUNK_COUNTS.format(file_id=uuid.UUID(file_id)),
        capture=True,
    ).strip()
    assert state["progress"] == {"done": total, "total": total}, state
    assert counts == f"{total}|{total}|{total}", counts
    smoke.step(f"the other worker finished it exactly once: chunks, positions, vectors {counts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("question")
    parser.add_argument("--standins", action="store_true")
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    args = parser.parse_args()
    content = args.file.read_bytes()
    env = {
        **os.environ,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
        "PROVENANCE_AUDIT_KEY": secrets.token_urlsafe(32),
        "APP_DB_PASSWORD": secrets.token_urlsafe(16),
        "DB_OWNER_PASSWORD": secrets.token_urlsafe(16),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SSL_REDIRECT": "0",  # plain http on loopback; behind TLS in production
    }
    smoke = Smoke(compose_command(args.standins), env)
    smoke.step("docker compose up (db, redis, migrate, web, 2 workers, beat)")
    smoke.run("up", "-d", "--no-build", "--scale", "worker=2")
    try:
        smoke.until("the web container's /healthz", healthy, 600)
        smoke.step("web healthy; setup_demo in the web container")
        printed = smoke.run("exec", "-T", "web", "python", "manage.py", "setup_demo", capture=True)
        key = re.search(r"API key:\s+(\S+)", printed).group(1)  # type: ignore[union-attr]
        app_id = re.search(r"app id:\s+(\S+)", printed).group(1)  # type: ignore[union-attr]
        response = request(
            "POST",
            "/v1/flow/files",
            key,
            files={"file": (args.file.name, content)},
            data={"data_source": "Handbook"},
        )
        assert response.status_code == 202, (response.status_code, response.text[:500])
        upload = response.json()
        smoke.step(f"uploaded {args.file.name} ({len(content)} bytes): {upload['file_id']}")

        state = smoke.until("the file to be ready", ready(key, upload["file_id"]), 900)
        smoke.step(f"ready: {state['progress']} in the worker container")
        response = request(
            "POST",
            f"/semantics/apps/{app_id}/query-executions",
            key,
            json_body={"query": args.question},
        )
        answer = response.json()
        assert response.status_code == 201 and answer["status"] == "completed", response.text[:500]
        assert "[1]" in answer["answer"], answer
        smoke.step(f"answered in {answer['latency_ms']:.0f} ms: {answer['answer'][:160]!r}")
        path = answer["quoted_sources_url"].removeprefix(BASE)
        response = request("GET", path, key)
        cited = {source["document"]["id"] for source in response.json()}
        assert response.status_code == 200 and upload["file_id"] in cited, response.text[:500]
        smoke.step(f"[1] leads to the uploaded file ({len(cited)} document(s) quoted)")
        response = request("GET", f"/v1/flow/files/{upload['file_id']}/content", key)
        downloaded = response.content
        assert response.status_code == 200, response.status_code
        same = hashlib.sha256(downloaded).hexdigest() == hashlib.sha256(content).hexdigest()
        assert same and downloaded == content, "the download differs from the upload"
        smoke.step(f"downloaded {len(downloaded)} bytes, identical (sha256 {upload['sha256']})")
        web = smoke.run("ps", "-q", "web", capture=True).strip()

        def docker_health() -> str:
            return subprocess.run(
                ["docker", "inspect", "--format", "{{.State.Health.Status}}", web],
                capture_output=True,
                text=True,
            ).stdout.strip()

        smoke.until(
            "Docker's HEALTHCHECK to pass", lambda: docker_health() == "healthy" or None, 180
        )
        smoke.step("the image's HEALTHCHECK reports the web container healthy")
        kill_a_worker_mid_embedding(smoke, key)
        verdict = smoke.run(
            "exec", "-T", "web", "python", "manage.py", "verify_audit_trail", capture=True
        )
        smoke.step(f"verify_audit_trail: {verdict.strip().splitlines()[-1]}")
        print("docker compose smoke: every step held")
    finally:
        if not args.keep:
            smoke.run("logs", "--no-color", "--tail", "40", "web", "worker")
            smoke.run("down", "-v")


if __name__ == "__main__":
    main()
