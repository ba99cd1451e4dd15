"""The run task: takes a run id, calls one service; re-delivery never answers twice
because the service claims the run with a conditional UPDATE."""

from __future__ import annotations

import logging

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from citations.threads import services
from documents.tasks import TRANSIENT

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=5,
    acks_late=True,
)
def run_execute(self: Task, run_id: str) -> None:
    try:
        services.run_execute(run_id=run_id)
    except TRANSIENT as exc:
        if self.request.retries >= self.max_retries:
            services.run_fail(run_id=run_id, code="server_error", message=str(exc))
            return
        services.run_release(run_id=run_id)
        raise
    except SoftTimeLimitExceeded:
        services.run_fail(run_id=run_id, code="server_error", message="the run took too long")
    except Exception as exc:
        logger.exception("run %s crashed", run_id)
        services.run_fail(
            run_id=run_id,
            code="server_error",
            message=f"internal error: {type(exc).__name__}: {exc}",
        )


@shared_task(acks_late=True)
def resume_stalled_runs() -> list[str]:
    return services.runs_resume_stalled()
