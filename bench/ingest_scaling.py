"""Ingestion throughput with 1 and 2 worker processes on the Redis broker.

The same documents -- ``FILES`` single-column prose PDFs of ``PAGES`` pages each
(``ingest_speed.prose_pdf``: SQuAD paragraphs set 11 pt on A4, each file starting
at another place of the text) -- are uploaded at once into a fresh data source and
ingested by a real Celery worker on Redis (``redis://127.0.0.1:6379/12``; the tests
use databases 13-15), once per layout:

- ``--concurrency 1``, one torch thread: a single worker process;
- ``--concurrency 2``, one torch thread each: the default worker on a 2-core host;
- ``--concurrency 1`` with ``PROVENANCE_TORCH_THREADS=2``: one process on both cores.

The clock runs from the first upload until every file is ``ready``; pages/s and
chunks/s are the totals over that time. Each layout gets a worker of its own
(started, warmed by a one-line file, stopped) on the database
``provenance_bench_ingest_scaling``; the same bytes go into a new data source each
time, so nothing is reused from an earlier layout. Redis must be running
(``make services`` starts it). Run as a script (``run()`` starts it as a child).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "var" / "bench"  # gitignored
DATABASE = "provenance_bench_ingest_scaling"
REDIS_URL = "redis://127.0.0.1:6379/12"
FILES, PAGES = 8, 25
POLL_SECONDS = 0.05
TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class Layout:
    label: str
    concurrency: int
    torch_threads: int


LAYOUTS = (
    Layout("1 process x 1 thread", 1, 1),
    Layout("2 processes x 1 thread", 2, 1),
    Layout("1 process x 2 threads", 1, 2),
)


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- the worker -------------------------------------------------------------------------


class Worker:
    """``celery worker`` (no beat) with the given layout, on the bench database and Redis."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.name = f"bench-scaling-{layout.concurrency}x{layout.torch_threads}"
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log_path = LOGS / f"worker-{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "provenance_site.settings.local",
            "PROVENANCE_DB_NAME": DATABASE,
            "CELERY_BROKER_URL": REDIS_URL,
            "PROVENANCE_TORCH_THREADS": str(self.layout.torch_threads),
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
        }

    def start(self, timeout: float = 180) -> None:
        command = [
            sys.executable, "-m", "celery", "-A", "provenance_site", "worker",
            "--concurrency", str(self.layout.concurrency), "--without-mingle",
            "--without-gossip", "-n", f"{self.name}@%h", "-l", "info",
        ]  # fmt: skip
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited: see {self.log_path}")
            if " ready." in self.log_path.read_text():
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker did not start in {timeout} s: see {self.log_path}")

    def stop(self) -> None:
        """SIGTERM to the worker's own process group (pool children too), then SIGKILL."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


# --- measuring ------------------------------------------------------------------------


def django_setup() -> None:
    os.environ["PROVENANCE_DB_NAME"] = DATABASE
    os.environ["CELERY_BROKER_URL"] = REDIS_URL  # uploads queue their work on Redis too
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for path in (ROOT, ROOT / "bench"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def redis_flush() -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as error:
        raise RuntimeError("Redis is not running on 127.0.0.1:6379: run `make services`") from error
    client.flushdb()


def documents() -> dict[str, bytes]:
    """``FILES`` prose PDFs, each starting at another share of the text."""
    from ingest_speed import prose_pdf

    return {f"prose-{n + 1}.pdf": prose_pdf(PAGES, start=n / FILES) for n in range(FILES)}


def data_source(label: str) -> Any:
    from documents.models import DataSource, Organization
    from retrieval.services import vector_database_default

    organization, _ = Organization.objects.get_or_create(name="Bench scaling")
    return DataSource.objects.create(
        organization=organization,
        name=f"{label} {time.time_ns()}",
        vector_database=vector_database_default(organization=organization),
    )


def ingest_all(source: Any, files: dict[str, bytes]) -> dict[str, Any]:
    """Upload every file, then wait until all are ready; totals and per-file seconds."""
    from documents.models import File
    from documents.uploads import file_upload

    started = time.perf_counter()
    ids = [
        file_upload(data_source=source, name=name, stream=io.BytesIO(data)).file.pk
        for name, data in files.items()
    ]
    uploaded = time.perf_counter() - started
    done: dict[Any, float] = {}
    while len(done) < len(ids):
        for pk, status in File.objects.filter(pk__in=ids).values_list("pk", "status"):
            if status == "failed":
                raise RuntimeError(f"{pk} failed: {File.objects.get(pk=pk).error_message}")
            if status == "ready":
                done.setdefault(pk, time.perf_counter() - started)
        if time.perf_counter() - started > TIMEOUT_SECONDS:
            raise RuntimeError(f"{len(ids) - len(done)} files not ready after {TIMEOUT_SECONDS} s")
        time.sleep(POLL_SECONDS)
    return _totals(ids, done, uploaded)


def _totals(ids: list[Any], done: dict[Any, float], uploaded: float) -> dict[str, Any]:
    from documents.models import Chunk, DocumentMarkdown

    seconds = max(done.values())
    markdowns = DocumentMarkdown.objects.filter(file_id__in=ids, is_active=True)
    pages = sum(count or 0 for count in markdowns.values_list("page_count", flat=True))
    chunks = Chunk.objects.filter(file_id__in=ids, is_retrievable=True).count()
    return {
        "files": len(ids),
        "pages": pages,
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "upload_seconds": round(uploaded, 2),
        "first_ready_seconds": round(min(done.values()), 2),
        "pages_per_s": round(pages / seconds, 1),
        "chunks_per_s": round(chunks / seconds, 1),
    }


def measure_layout(layout: Layout, files: dict[str, bytes]) -> dict[str, Any]:
    redis_flush()
    worker = Worker(layout)
    load_before = loadavg()
    worker.start()
    try:
        ingest_all(data_source(f"warm-up {layout.label}"), {"warm-up.md": b"# Warm-up\n\nHi.\n"})
        figures = ingest_all(data_source(layout.label), files)
    finally:
        worker.stop()
    figures.update(
        concurrency=layout.concurrency,
        torch_threads=layout.torch_threads,
        loadavg_before=load_before,
        loadavg_after=loadavg(),
    )
    return figures


def measure() -> dict[str, Any]:
    django_setup()
    files = documents()
    results = {}
    for layout in LAYOUTS:
        results[layout.label] = measure_layout(layout, files)
        print(f"{layout.label}: {results[layout.label]}", file=sys.stderr, flush=True)
    one, two = (results[layout.label] for layout in LAYOUTS[:2])
    return {
        "broker": REDIS_URL,
        "documents": f"{FILES} single-column prose PDFs x {PAGES} pages (ingest_speed.prose_pdf)",
        "layouts": results,
        "ratio_2_to_1_processes": {
            key: round((two[key] / two["seconds"]) / (one[key] / one["seconds"]), 2)
            for key in ("pages", "chunks")
        },
        "load_average": loadavg(),
    }


def to_markdown(result: dict[str, Any]) -> str:
    ratio = result["ratio_2_to_1_processes"]
    lines = [
        f"{result['documents']}, uploaded at once and ingested by a real Celery worker on "
        f"Redis (`{result['broker']}`); first upload to the last file `ready`. "
        f"2 processes / 1 process: **{ratio['pages']}x** pages/s, "
        f"{ratio['chunks']}x chunks/s.",
        "",
        "| worker | files | pages | chunks | seconds | pages/s | chunks/s | load before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, f in result["layouts"].items():
        lines.append(
            f"| {label} (`--concurrency {f['concurrency']}`, {f['torch_threads']} torch "
            f"thread{'s' if f['torch_threads'] > 1 else ''}) | {f['files']} | {f['pages']} "
            f"| {f['chunks']} | {f['seconds']} | **{f['pages_per_s']}** | {f['chunks_per_s']} "
            f"| {f['loadavg_before']} / {f['loadavg_after']} |"
        )
    return "\n".join(lines)


def run(quick: bool = False) -> dict[str, Any]:
    from _child import run_script

    return run_script(Path(__file__).resolve(), timeout=1800)


def main() -> int:
    from _child import script_main

    return script_main(measure, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
