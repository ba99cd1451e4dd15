"""Runs whose broker message was lost, or whose worker died, are queued again by
the beat sweep; fresh runs are left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from citations.llm_apps import app_create
from citations.models import Run
from citations.threads import services
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_sweep_requeues_only_stalled_runs() -> None:
    org = factories.organization()
    factories.data_source(org, "Policies")
    app = app_create(organization=org, name="HR", data_source_names=["Policies"])
    runs = []
    for _ in range(3):
        thread = services.thread_create(organization=org)
        services.message_create(thread=thread, role="user", content="How long are invoices kept?")
        runs.append(services.run_create(thread=thread, app=app))
    lost, dead, fresh = runs
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    Run.objects.filter(pk=lost.pk).update(created_at=long_ago)
    Run.objects.filter(pk=dead.pk).update(status="in_progress", started_at=long_ago)
    assert set(services.runs_resume_stalled()) == {str(lost.pk), str(dead.pk)}
    assert Run.objects.get(pk=fresh.pk).status == "queued"
