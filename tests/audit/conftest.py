"""Evidence made by the real services: a small ingested handbook and answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.core.management import call_command
from pytest_django import DjangoDbBlocker

from citations.llm_apps import app_create
from citations.models import App
from documents.models import File, Organization
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

HANDBOOK = (
    b"# Handbook\n\n## Retention\n\nInvoices are kept for seven years after the fiscal year.\n\n"
    b"## Leave\n\nEmployees receive twenty-five days of paid leave per year.\n\n"
    b"## Travel\n\nTrains are preferred over flights for trips shorter than four hours.\n"
)
OTHER = b"# Globex rules\n\nGlobex keeps invoices for three years only.\n"


@dataclass
class Trail:
    acme: Organization
    globex: Organization
    acme_app: App
    globex_app: App
    handbook: File


@pytest.fixture(scope="package")
def trail(
    django_db_setup: None, django_db_blocker: DjangoDbBlocker, celery_worker: WorkerProcess
) -> Iterator[Trail]:
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
        acme, globex = factories.organization("Acme"), factories.organization("Globex")
        acme_source = factories.data_source(acme, "Policies")
        globex_source = factories.data_source(globex, "Policies")
        handbook = factories.upload(acme_source, "handbook.md", HANDBOOK).file
        other = factories.upload(globex_source, "globex.md", OTHER).file
        for record in (handbook, other):
            assert wait_for_status(record.pk).status == "ready"
        yield Trail(
            acme=acme,
            globex=globex,
            handbook=handbook,
            acme_app=app_create(organization=acme, name="Acme HR", data_source_names=["Policies"]),
            globex_app=app_create(
                organization=globex, name="Globex HR", data_source_names=["Policies"]
            ),
        )
        call_command("flush", interactive=False, verbosity=0)
