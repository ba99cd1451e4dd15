"""A cited document's title is its own (issue 55, the seeds' details): the format's
recorded title (DOCX core properties, HTML <title>), else its first heading; REST's
quoted sources show it as ``document.title`` (always null before)."""

from __future__ import annotations

import io

import docx
import pytest
from rest_framework.test import APIClient

from citations.llm_apps import app_create
from citations.services.execution import query_execute
from documents.models import File
from documents.titles import document_title
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _docx(title: str, text: str) -> bytes:
    document = docx.Document()
    document.core_properties.title = title
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_each_format_gives_its_own_title_and_quoted_sources_show_it(
    celery_worker: WorkerProcess,
) -> None:
    source = factories.data_source()
    files = {
        "Travel Rules 2027": factories.upload(
            source,
            "travel.html",
            b"<html><head><title>Travel Rules 2027</title></head><body>"
            b"<p>Trains are preferred for trips under four hours.</p></body></html>",
        ).file,
        "Expense Handbook": factories.upload(
            source, "expenses.md", b"# Expense Handbook\n\nReceipts are kept for ten years.\n"
        ).file,
        "Parking Policy": factories.upload(
            source,
            "parking.docx",
            _docx("Parking Policy", "Visitors park in the north garage."),
        ).file,
    }
    assert files
    for title, record in files.items():
        assert wait_for_status(record.pk).status == "ready", record.error_message
        markdown = File.objects.get(pk=record.pk).markdowns.get(is_active=True)
        assert markdown.metadata["title"] == title

    app = app_create(
        organization=source.organization, name="Rules", data_source_names=[source.name]
    )
    execution = query_execute(app=app, question="How long are receipts kept?")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.api_key(source.organization)}")
    sources = client.get(
        f"/semantics/apps/{app.pk}/query-execution-sources/{execution.pk}/get-quoted-sources"
    ).json()
    assert sources, execution.answer
    assert sources[0]["document"]["title"] == "Expense Handbook"


@pytest.mark.django_db
def test_the_title_falls_back_to_the_first_heading_and_is_bounded() -> None:
    assert document_title({"title": "  Own  "}, "# Heading\n") == "Own"
    assert document_title({}, "intro\n\n## First section ##\n\n# Later\n") == "First section"
    assert document_title({"title": ""}, "no heading at all\n") == ""
    front = "---\ntitle: x\n---\n"
    assert document_title({}, front + "# Body\n", body_start=len(front)) == "Body"
    assert len(document_title({}, "# " + "x" * 5000 + "\n")) == 300
