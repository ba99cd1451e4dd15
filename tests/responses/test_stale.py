"""A response whose answering process died stays ``in_progress`` only until the
stale-answer sweep: then a client polling it reads ``failed`` and why."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django import Settings

from citations.llm_apps import app_create
from citations.models import App, ResponseRecord, ResponseStatus
from citations.tasks import sweep_stale_answers
from core.api_keys import api_key_verify
from tests import factories

pytestmark = pytest.mark.django_db


def _record(app: App, age: timedelta, key: str) -> ResponseRecord:
    record = ResponseRecord.objects.create(
        organization=app.organization,
        app=app,
        question="How long are invoices kept?",
        caller_api_key=api_key_verify(presented=key),  # the key reads its own response
    )
    ResponseRecord.objects.filter(pk=record.pk).update(created_at=timezone.now() - age)
    return record


def test_the_sweep_fails_a_stale_response_and_leaves_a_fresh_one(settings: Settings) -> None:
    organization = factories.organization("Acme")
    factories.data_source(organization, "Policies")
    app = app_create(organization=organization, name="HR", data_source_names=["Policies"])
    stale_seconds = settings.PROVENANCE_QUERY_STALE_SECONDS
    key = factories.api_key(organization)
    stale = _record(app, timedelta(seconds=stale_seconds + 5), key)
    fresh = _record(app, timedelta(seconds=0), key)

    assert str(stale.pk) in sweep_stale_answers()

    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.status == ResponseStatus.FAILED and stale.completed_at is not None
    assert stale.error_message.startswith("abandoned:")
    assert fresh.status == ResponseStatus.IN_PROGRESS
    reply = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get(f"/v1/responses/{stale.pk}").json()
    assert reply["status"] == "failed" and reply["error"]["code"] == "server_error"
    assert str(stale.pk) not in sweep_stale_answers()  # swept once
