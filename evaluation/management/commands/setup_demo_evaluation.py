"""Queue the demo evaluation (after ``setup_demo``, with the worker running)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from evaluation.tasks import evaluation_demo_task


class Command(BaseCommand):
    help = (
        "Evaluate the demo 'Handbook' app on the shipped gold set once its documents are "
        "ingested (on the worker; does nothing when that evaluation exists)."
    )

    def handle(self, *args: object, **options: Any) -> None:
        evaluation_demo_task.delay()
        self.stdout.write("demo evaluation queued: see Evaluation runs in the admin")
