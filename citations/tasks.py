"""Celery autodiscovery imports ``citations.tasks``; the tasks live next to their services."""

from celery import shared_task

from citations.services import query_executions_sweep_stale
from citations.threads.tasks import run_execute


@shared_task(acks_late=True)
def sweep_stale_answers() -> list[str]:
    """Beat: fail and chain the answers left ``running`` by a process that died."""
    return query_executions_sweep_stale()


__all__ = ["run_execute", "sweep_stale_answers"]
