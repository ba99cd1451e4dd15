"""Celery autodiscovery imports ``citations.tasks``; the tasks live next to their services."""

from celery import shared_task

from citations.responses.services import responses_sweep_stale
from citations.services.abandoning import query_executions_sweep_stale
from citations.threads.tasks import run_execute


@shared_task(acks_late=True)
def sweep_stale_answers() -> list[str]:
    """Beat: fail and chain the answers left ``running`` by a process that died, and
    the Responses API's records left ``in_progress`` with them."""
    return query_executions_sweep_stale() + responses_sweep_stale()


__all__ = ["run_execute", "sweep_stale_answers"]
