"""An ingested library shared by the answer tests of this package: the demo
documents (Markdown, PDF, DOCX, PPTX, JSON), the six SQuAD articles and a
repair-shop estimate PDF (form tables) of the shared corpus, ingested once
through the real worker."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django import DjangoDbBlocker

from citations.llm_apps import app_create
from citations.models import App
from documents.demo import demo_documents_write
from documents.models import Organization
from tests import factories
from tests.conftest import wait_for_status
from tests.support import squad
from tests.support.worker import WorkerProcess


@dataclass
class Library:
    organization: Organization
    key: str
    handbook: App
    public: App
    squad: App
    estimates: App


ESTIMATE_PDF = "markitdown/test_files/REPAIR-2022-INV-001_multipage.pdf"


@pytest.fixture(scope="package")
def library(
    django_db_setup: None,
    django_db_blocker: DjangoDbBlocker,
    celery_worker: WorkerProcess,
    corpus: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Library]:
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
        org = factories.organization("Acme")
        handbook_source = factories.data_source(org, "Handbook")
        squad_source = factories.data_source(org, "SQuAD")
        estimates_source = factories.data_source(org, "Estimates")
        uploads = [
            factories.upload(handbook_source, path.name, path.read_bytes()).file
            for path in demo_documents_write(tmp_path_factory.mktemp("demo"))
        ]
        uploads += [
            factories.upload(
                squad_source, f"{a['title']}.md", squad.article_markdown(a).encode()
            ).file
            for a in squad.load(corpus)
        ]
        estimate = corpus / ESTIMATE_PDF
        uploads.append(
            factories.upload(estimates_source, estimate.name, estimate.read_bytes()).file
        )
        for record in uploads:
            assert wait_for_status(record.pk, timeout=300).status == "ready", record.name
        yield Library(
            organization=org,
            key=factories.api_key(org),
            handbook=app_create(organization=org, name="HR", data_source_names=["Handbook"]),
            public=app_create(
                organization=org, name="Public", data_source_names=["Handbook"], is_public=True
            ),
            squad=app_create(organization=org, name="SQuAD", data_source_names=["SQuAD"]),
            estimates=app_create(
                organization=org, name="Estimates", data_source_names=["Estimates"]
            ),
        )
        call_command("flush", interactive=False, verbosity=0)
