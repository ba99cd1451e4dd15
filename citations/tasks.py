"""Celery autodiscovery imports ``citations.tasks``; the tasks live next to their services."""

from citations.threads.tasks import run_execute

__all__ = ["run_execute"]
