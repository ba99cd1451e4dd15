"""The worker's side of an evaluation run: ids in, one slice of questions per task."""

from __future__ import annotations

from celery import Task, shared_task
from django.db import OperationalError

from evaluation.services import Advance, evaluation_run_advance


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def evaluation_run_advance_task(run_id: str) -> str:
    """Ask the next slice of a run's questions; queue the next slice if some remain."""
    result = evaluation_run_advance(run_id=run_id)
    if result is Advance.MORE:
        evaluation_run_advance_task.delay(run_id)
    return result.value


DEMO_WAIT_SECONDS = 5
DEMO_WAIT_TRIES = 360  # half an hour of ingestion at most


@shared_task(bind=True, acks_late=True, max_retries=DEMO_WAIT_TRIES)
def evaluation_demo_task(self: Task) -> str:
    """Start the demo evaluation once the demo documents are ingested."""
    from evaluation.demo import demo_evaluation_ensure

    state = demo_evaluation_ensure()
    if state == "waiting":
        raise self.retry(countdown=DEMO_WAIT_SECONDS)
    return state
