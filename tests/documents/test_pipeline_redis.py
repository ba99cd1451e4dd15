"""End to end on a real Redis broker: a worker and the `ingest` command, both
configured only through CELERY_BROKER_URL, as on a multi-host deployment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from documents.models import Chunk, File
from tests import factories
from tests.support.worker import ROOT, WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@pytest.fixture
def redis_url() -> str:
    import redis

    url = "redis://127.0.0.1:6379/15"
    client = redis.Redis.from_url(url)
    client.ping()  # make test starts Redis; a failure here is a real failure
    client.flushdb()
    return url


def test_ingest_command_and_worker_over_redis(
    redis_url: str, corpus: Path, django_db_setup: None
) -> None:
    factories.organization("Redis Org")
    env = {"CELERY_BROKER_URL": redis_url}
    worker = WorkerProcess("redis", extra_env=env)
    worker.start()
    try:
        command_env = {**worker.env(), **env}
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "ingest",
                str(corpus / "docling/md/duck.md"),
                str(corpus / "docling/md/blocks.md"),
                "--data-source",
                "Docs",
                "--organization",
                "Redis Org",
                "--wait",
                "--timeout",
                "120",
            ],
            cwd=ROOT,
            env=command_env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        worker.stop()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ready     duck.md rev 1" in result.stdout
    assert "ready     blocks.md rev 1" in result.stdout
    files = File.objects.filter(data_source__name="Docs")
    assert {f.status for f in files} == {"ready"}
    assert (
        Chunk.objects.filter(file__in=files, embedding__isnull=False).count()
        == Chunk.objects.filter(file__in=files).count()
        > 0
    )
    # the work went through this Redis database: kombu bound our queues there
    import redis

    keys = redis.Redis.from_url(redis_url).keys("_kombu.binding.*")
    bound = {k.decode() if isinstance(k, bytes) else k for k in keys}
    assert "_kombu.binding.celery" in bound, bound
