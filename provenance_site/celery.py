"""The Celery application: configuration comes from Django settings (``CELERY_*``)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

import provenance_site.broker  # noqa: F401 - registers the embedded broker's URL scheme

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance_site.settings.local")

app = Celery("provenance")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _ensure_broker_folders(sender: Celery, **_: object) -> None:
    """The filesystem broker needs its folders before the first message."""
    from pathlib import Path

    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


@worker_ready.connect
def _resume_after_start(sender: object, **_: object) -> None:
    """A worker that starts picks up ingestions a crashed worker left behind."""
    from documents.tasks import resume_stalled_ingestions

    resume_stalled_ingestions.delay()


@worker_process_init.connect
def _warm_embedder(**_: object) -> None:
    """Load the embedding model (and, in bf16, compile its document encoder) when a
    worker process starts, not on the first file."""
    from django.conf import settings

    # two pool processes of one thread each embed fastest on a 2-core host
    os.environ.setdefault("PROVENANCE_TORCH_THREADS", "1")
    if settings.PROVENANCE_WARM_EMBEDDER:
        from retrieval.embedders import MiniLmEmbedder, default_embedder

        embedder = default_embedder()
        if isinstance(embedder, MiniLmEmbedder):
            embedder.embed_documents(["warm-up"])


@worker_process_init.connect  # after the embedder's warm-up: its environment is final
def _start_conversion_fork_server(**_: object) -> None:
    """Conversion children forked from a process that has imported PyMuPDF: a
    file's conversion no longer waits ~0.5 s for it (``converters/fork_server.py``)."""
    from django.conf import settings

    from documents.converters.sandbox import fork_server_start

    if settings.PROVENANCE_CONVERT_FORK_SERVER:
        fork_server_start(
            timeout_s=settings.PROVENANCE_CONVERT_TIMEOUT_SECONDS,
            memory_mb=settings.PROVENANCE_CONVERT_MEMORY_MB,
        )
