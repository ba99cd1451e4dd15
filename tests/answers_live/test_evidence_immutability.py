"""Invariant 7: a query's recorded sources never change afterwards, whatever
happens to the documents (new revision, deletion)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from citations.llm_apps import app_create
from citations.services import query_execute
from documents.ingestion import file_delete
from tests import factories
from tests.conftest import wait_for_status
from tests.support.http import streamed
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

V1 = b"# Retention\n\nInvoices are kept for five years after the fiscal year ends.\n"
V2 = b"# Retention\n\nInvoices are kept for ten years after the fiscal year ends.\n"
QUESTION = "How long are invoices kept?"


def _sources(client: APIClient, app_id: object, query_id: object) -> list[dict]:
    response = client.get(
        f"/semantics/apps/{app_id}/query-execution-sources/{query_id}/get-quoted-sources"
    )
    assert response.status_code == 200
    return response.json()


def test_old_answers_keep_their_sources_after_a_new_revision_and_a_deletion(
    celery_worker: WorkerProcess,
) -> None:
    org = factories.organization()
    source = factories.data_source(org, "Finance")
    key = factories.api_key(org)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    first = factories.upload(source, "retention.md", V1).file
    assert wait_for_status(first.pk).status == "ready"
    app = app_create(organization=org, name="Finance", data_source_names=["Finance"])

    old = query_execute(app=app, question=QUESTION)
    assert "five years" in old.answer
    before = _sources(client, app.pk, old.pk)

    second = factories.upload(source, "retention.md", V2).file
    assert wait_for_status(second.pk).status == "ready"
    new = query_execute(app=app, question=QUESTION)
    assert "ten years" in new.answer and "five years" not in new.answer
    assert new.index_hash != old.index_hash
    assert _sources(client, app.pk, new.pk)[0]["provenance"]["file_revision"] == 2

    file_delete(file=second, reason="policy withdrawn")
    gone = query_execute(app=app, question=QUESTION)
    assert not gone.quoted_sources.exists()

    old.refresh_from_db()
    assert "five years" in old.answer
    assert _sources(client, app.pk, old.pk) == before
    assert before[0]["provenance"]["file_revision"] == 1
    assert "five years" in before[0]["chunk"]["data"]
    original = client.get(before[0]["document"]["url"])
    assert streamed(original) == V1
    claim = old.claim_citations.get()
    assert (
        claim.quoted_source.chunk.chunk_text[claim.source_start : claim.source_end]
        == claim.source_sentence
    )
