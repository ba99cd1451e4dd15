"""Fixtures of the web page tests: members of organizations and documents
ingested in-process by the real pipeline stages (no worker needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.test import Client

from citations.llm_apps import app_create
from citations.models import App
from documents import ingestion
from documents.models import (
    IN_PROGRESS_STATUSES,
    DataSource,
    File,
    Organization,
    OrganizationMember,
)
from tests import factories
from tests.conftest import wait_for_status

PASSWORD = "correct horse battery staple"  # a test login

REMOTE_WORK = (
    b"# Remote work charter\n\n"
    b"## Eligibility\n\n"
    b"Employees may work remotely two days per week after their probation period. "
    b"Managers approve the schedule every quarter, taking team meetings, customer visits "
    b"and on-call duties into account, and record it in the staff planning tool. "
    b"Remote days cannot be carried over from one week to the next.\n\n"
    b"## Equipment\n\n"
    b"The company provides a laptop and a monitor for the home office. Chairs and desks are "
    b"reimbursed up to three hundred euros once every five years on presentation of a receipt. "
    b"Broken equipment is returned to the service desk, which replaces it within a week.\n\n"
    b"## Security\n\n"
    b"Confidential documents are never printed at home. Every connection to internal systems "
    b"goes through the company VPN, and screens are locked whenever the workstation is left "
    b"unattended, even for a moment. Lost devices are reported to the security team at once.\n\n"
    b"## Expenses\n\n"
    b"Internet costs are covered by a flat monthly allowance of twenty euros. Electricity, "
    b"heating and rent remain the employee's own expenses and are not reimbursed.\n"
)


def member_of(org: Organization, username: str, role: str = "editor") -> User:
    """A member with ``role`` (core.roles); editors, who may upload, unless said."""
    user = get_user_model().objects.create_user(username, f"{username}@example.com", PASSWORD)
    OrganizationMember.objects.create(organization=org, user=user, role=role)
    return user


def ingest_now(record: File) -> File:
    """Run convert → chunk → embed in this process, as the worker would.

    In a test that commits (a live server), the upload also queued the pipeline:
    when the suite's worker is running it may claim a stage first, and the stage
    here then leaves the file to it; the file is returned once that worker is done.
    """
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        stage(file_id=str(record.pk))
    record.refresh_from_db()
    if record.status in IN_PROGRESS_STATUSES:
        record = wait_for_status(record.pk)
    return record


def signed_in(user: User, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@dataclass
class Tenant:
    org: Organization
    user: User
    source: DataSource
    app: App
    client: Client


@pytest.fixture
def tenant(db: None) -> Tenant:
    """Acme with member alice, a Handbook data source and an HR app over it."""
    org = factories.organization("Acme")
    user = member_of(org, "alice")
    source = factories.data_source(org, "Handbook")
    app = app_create(organization=org, name="HR", data_source_names=["Handbook"])
    return Tenant(org=org, user=user, source=source, app=app, client=signed_in(user))


@pytest.fixture
def remote_work(tenant: Tenant) -> File:
    record = ingest_now(factories.upload(tenant.source, "remote.md", REMOTE_WORK).file)
    assert record.status == "ready", record.error_message
    return record
