"""Celery tasks: thin wrappers that take ids and call one ingestion stage."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import chain, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from documents.ingestion.chunk import file_chunk
from documents.ingestion.convert import file_convert
from documents.ingestion.embed import file_embed, file_embed_share
from documents.ingestion.requeue import ingestion_resume_stalled
from documents.ingestion.status import file_fail
from documents.originals import originals_check_due, originals_verify

logger = logging.getLogger(__name__)
# errors worth retrying with backoff (database or broker briefly away); shared by all tasks
TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)
_OPTIONS = {
    "autoretry_for": TRANSIENT,
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 5,
    "acks_late": True,
}


def _run_stage(stage: Callable[..., object], file_id: str, **options: Any) -> None:
    try:
        stage(file_id=file_id, **options)
    except TRANSIENT:
        raise
    except SoftTimeLimitExceeded:
        file_fail(file_id=file_id, reason="processing took too long and was stopped")
    except Exception as exc:
        logger.exception("stage %s crashed on %s", stage.__name__, file_id)
        file_fail(file_id=file_id, reason=f"internal error: {type(exc).__name__}: {exc}")


@shared_task(**_OPTIONS)
def convert_file(file_id: str) -> None:
    _run_stage(file_convert, file_id)


@shared_task(**_OPTIONS)
def chunk_file(file_id: str) -> None:
    _run_stage(file_chunk, file_id)


@shared_task(**_OPTIONS)
def embed_file(file_id: str, turn: str | None = None) -> None:
    """One slice of a file's embedding; the next one is queued behind other work."""
    slice_seconds = settings.PROVENANCE_EMBED_SLICE_SECONDS
    _run_stage(file_embed, file_id, turn=turn, slice_seconds=slice_seconds)


@shared_task(**_OPTIONS)
def embed_file_share(
    file_id: str, markdown_id: str, sharing: int = 2, slice_seconds: float | None = None
) -> None:
    """A second process's share of one slice of a file's embedding; failures only
    log: the stage's owner embeds whatever a helper leaves."""
    try:
        file_embed_share(
            file_id=file_id, markdown_id=markdown_id, sharing=sharing, slice_seconds=slice_seconds
        )
    except TRANSIENT:
        raise
    except Exception:
        logger.exception("embedding helper crashed on %s", file_id)


@shared_task(acks_late=True)
def resume_stalled_ingestions() -> list[str]:
    return ingestion_resume_stalled()


@shared_task(acks_late=True)
def verify_originals() -> dict[str, int] | None:
    """The periodic re-hash of every stored original, when one is due (beat asks
    hourly; the last sweep's time is the evidence's, not beat's)."""
    if not originals_check_due():
        return None
    check = originals_verify()
    return {"checked": check.checked, "altered": len(check.altered), "missing": len(check.missing)}


def pipeline_for(file_id: str, *, queue: str | None = None) -> chain:
    """convert → chunk → embed, every stage on ``queue`` (the default one unless
    given); each stage is a no-op if its work is done."""
    options = {"queue": queue} if queue else {}
    return chain(
        *(stage.si(file_id).set(**options) for stage in (convert_file, chunk_file, embed_file))
    )
