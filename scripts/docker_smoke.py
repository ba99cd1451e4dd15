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
from pathlib import Path

import requests

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

    def until(self, what: str, check: object, timeout: float) -> object:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()  # type: ignore[operator]
            if value:
                return value
            time.sleep(1)
        raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")


def healthy() -> bool:
    try:
        return request("GET", "/healthz").status_code == 200
    except requests.RequestException:
        return False


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
    smoke.step("docker compose up (db, redis, migrate, web, worker, beat)")
    smoke.run("up", "-d", "--no-build")
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

        def ready() -> dict | None:
            state = request("GET", f"/v1/flow/files/{upload['file_id']}", key).json()
            assert state["status"] != "failed", state["error_message"]
            return state if state["status"] == "ready" else None

        state = smoke.until("the file to be ready", ready, 900)
        smoke.step(f"ready: {state['progress']} in the worker container")  # type: ignore[index]
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

        smoke.until("Docker's HEALTHCHECK to pass", lambda: docker_health() == "healthy", 180)
        smoke.step("the image's HEALTHCHECK reports the web container healthy")
        verdict = smoke.run(
            "exec", "-T", "worker", "python", "manage.py", "verify_audit_trail", capture=True
        )
        smoke.step(f"verify_audit_trail: {verdict.strip().splitlines()[-1]}")
        print("docker compose smoke: every step held")
    finally:
        if not args.keep:
            smoke.run("logs", "--no-color", "--tail", "40", "web", "worker")
            smoke.run("down", "-v")


if __name__ == "__main__":
    main()
