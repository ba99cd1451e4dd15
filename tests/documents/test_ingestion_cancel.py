"""Cancelling ingestion: ``POST /v1/flow/files/{id}/cancel`` and deleting a file
stop its queued and running work within seconds; the cancellation is recorded
in the document's ledger; a cancelled file can be retried."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import DocumentEvent, EvidenceEntry
from documents import ingestion
from documents.ingestion.chunk import _chunk_rows, _chunks_replace
from documents.leases import Lease
from documents.models import ApiKey, Chunk, DataSource, File
from tests import factories
from tests.conftest import wait_for_status
from tests.documents.test_pipeline import _slow_to_read_pdf
from tests.support.generated import notes_markdown, wait_until
from tests.support.tamper import triggers_off
from tests.support.worker import WorkerProcess

if TYPE_CHECKING:
    from rest_framework.response import _MonkeyPatchedResponse


MEMO = b"# Memo\n\nThe office shuts at six.\n"


def _client(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _cancel(
    client: APIClient, file_id: object, body: object = None, **kwargs: Any
) -> _MonkeyPatchedResponse:
    return client.post(f"/v1/flow/files/{file_id}/cancel", body, format="json", **kwargs)


def _embedded(record: File) -> int:
    return Chunk.objects.filter(file=record, embedding__isnull=False).count()


def _settled(record: File, *, quiet: float) -> float:
    """Seconds until no vector has been added to the file's chunks for ``quiet`` s."""
    started, last, since = time.monotonic(), _embedded(record), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.2)
        now = _embedded(record)
        if now != last:
            last, since = now, time.monotonic()
        assert time.monotonic() - started < 60, "the embedding never stopped"
    return since - started


# --- the endpoint -----------------------------------------------------------------------


@pytest.fixture
def tenant() -> tuple[DataSource, str]:
    org = factories.organization("Acme")
    source = factories.data_source(org, "Human Resources")
    return source, factories.api_key(org)


@pytest.mark.django_db
def test_cancelling_a_pending_file_fails_it_records_who_and_lets_it_be_retried(
    tenant: tuple[DataSource, str],
) -> None:
    source, key = tenant
    record = factories.upload(source, "memo.md", MEMO).file  # not committed: never queued
    response = _cancel(_client(key), record.pk, {"reason": "wrong file"})
    assert response.status_code == 200, response.json()
    body = response.json()
    prefix = ApiKey.objects.get(organization=source.organization).prefix
    assert body["status"] == "failed" and body["error_message"] == f"cancelled by api-key:{prefix}"
    event = DocumentEvent.objects.get(file=record, kind="cancellation")
    assert event.reason == "wrong file" and event.actor.startswith("api-key:")
    assert EvidenceEntry.objects.filter(
        record_table=DocumentEvent._meta.db_table, record_id=str(event.pk)
    ).exists()

    # its queued stages exit at their claim
    assert ingestion.file_convert(file_id=str(record.pk)) is False
    assert File.objects.get(pk=record.pk).status == "failed"

    record.refresh_from_db()
    assert ingestion.retry_can_help(record)
    ingestion.file_retry(file=record)
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "ready" and record.error_message == ""


@pytest.mark.django_db
def test_without_a_reason_the_ledger_says_who_cancelled(tenant: tuple[DataSource, str]) -> None:
    source, key = tenant
    record = factories.upload(source, "memo.md", MEMO).file
    assert _cancel(_client(key), record.pk).status_code == 200
    event = DocumentEvent.objects.get(file=record, kind="cancellation")
    assert event.reason == File.objects.get(pk=record.pk).error_message
    assert event.reason.startswith("cancelled by api-key:")


@pytest.mark.django_db
def test_a_ready_or_failed_file_cannot_be_cancelled_409(tenant: tuple[DataSource, str]) -> None:
    source, key = tenant
    record = factories.upload(source, "memo.md", MEMO).file
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    response = _cancel(_client(key), record.pk)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "not_in_progress" and error["type"] == "conflict_error"
    assert "is ready" in error["message"]
    File.objects.filter(pk=record.pk).update(status="failed")
    assert _cancel(_client(key), record.pk).status_code == 409
    assert not DocumentEvent.objects.filter(kind="cancellation").exists()


@pytest.mark.django_db
def test_cancel_answers_404_for_another_tenant_and_unknown_ids_401_without_a_key(
    tenant: tuple[DataSource, str],
) -> None:
    source, _key = tenant
    record = factories.upload(source, "memo.md", MEMO).file
    other = _client(factories.api_key(factories.organization("Globex")))
    for file_id in (record.pk, "00000000-0000-0000-0000-000000000000", "not-a-uuid"):
        response = _cancel(other, file_id)
        assert response.status_code == 404, file_id
        assert response.json()["error"]["type"] == "not_found_error"
    assert _cancel(_client(None), record.pk).status_code == 401
    assert _cancel(_client("pk_bogus"), record.pk).status_code == 401
    assert File.objects.get(pk=record.pk).status == "pending"
    assert not DocumentEvent.objects.filter(kind="cancellation").exists()


@pytest.mark.django_db
def test_cancel_refuses_a_bad_body_and_other_methods(tenant: tuple[DataSource, str]) -> None:
    source, key = tenant
    record = factories.upload(source, "memo.md", MEMO).file
    client = _client(key)
    for body, code in (
        (["stop"], "invalid_body"),
        ({"reason": 42}, "invalid_reason"),
        ({"reason": ["stop"]}, "invalid_reason"),
        ({"reason": "x" * 2001}, "reason_too_long"),
    ):
        response = _cancel(client, record.pk, body)
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == code, body
    malformed = client.generic(
        "POST", f"/v1/flow/files/{record.pk}/cancel", "{not json", content_type="application/json"
    )
    assert malformed.status_code == 400 and "error" in malformed.json()
    for method in ("get", "put", "delete", "patch"):
        response = getattr(client, method)(f"/v1/flow/files/{record.pk}/cancel")
        assert response.status_code == 405, method
        assert response.json()["error"]["code"] == "method_not_allowed"
    assert File.objects.get(pk=record.pk).status == "pending"


@pytest.mark.django_db
def test_cancelling_a_conversion_again_leaves_the_file_ready_on_its_previous_one(
    tenant: tuple[DataSource, str],
) -> None:
    source, key = tenant
    record = factories.upload(source, "memo.md", MEMO).file
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    active = record.markdowns.get(is_active=True)
    with triggers_off():
        record.markdowns.update(converter_version="0.0.1")
    assert ingestion.file_reconvert(file=record, reason="test: upgrade")
    response = _cancel(_client(key), record.pk)
    assert response.status_code == 200
    assert response.json()["status"] == "ready" and response.json()["is_current"]
    assert "cancelled by api-key:" in response.json()["error_message"]
    assert record.markdowns.get(is_active=True) == active
    assert ingestion.file_convert(file_id=str(record.pk)) is False


@pytest.mark.django_db
def test_a_stage_that_lost_its_file_stores_nothing(tenant: tuple[DataSource, str]) -> None:
    """A stage holding the file when it is cancelled finds its claim gone at its
    next check or write: nothing stored, the outcome stays the cancellation's."""
    source, _key = tenant
    record = factories.upload(source, "memo.md", MEMO).file
    assert ingestion.file_convert(file_id=str(record.pk))
    held = timezone.now() + timedelta(minutes=1)
    File.objects.filter(pk=record.pk).update(lease_owner="someone-else", lease_expires_at=held)
    assert ingestion.file_chunk(file_id=str(record.pk)) is False  # claim: held elsewhere
    lease = Lease(file_id=str(record.pk), token="stale")
    markdown = record.markdowns.get()
    chunks, locations = _chunk_rows(markdown)
    assert _chunks_replace(lease, markdown, chunks, locations) is False
    assert not Chunk.objects.filter(file=record).exists()


# --- through the worker -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_cancel_stops_a_running_embedding_within_seconds_and_retry_finishes_it(
    celery_worker: WorkerProcess,
) -> None:
    source = factories.data_source()
    key = factories.api_key(source.organization)
    record = factories.upload(source, "archive.md", notes_markdown(800, seed=11)).file
    wait_until(
        lambda: File.objects.get(pk=record.pk).progress_done > 0 and _embedded(record) > 0,
        timeout=180,
        what="embedding starts",
    )
    response = _cancel(_client(key), record.pk, {"reason": "uploaded by mistake"})
    assert response.status_code == 200 and response.json()["status"] == "failed"
    stopped = _settled(record, quiet=5)
    print(f"\nembedding stopped {stopped:.1f} s after the cancellation")
    record.refresh_from_db()
    total = Chunk.objects.filter(file=record).count()
    assert record.status == "failed" and _embedded(record) < total
    assert record.lease_owner == "" and record.lease_expires_at is None
    assert stopped < 15

    # the workers are free again: a small upload is ready at once
    small = factories.upload(source, "memo.md", MEMO).file
    assert wait_for_status(small.pk, timeout=60).status == "ready"

    record.refresh_from_db()
    ingestion.file_retry(file=record)
    finished = wait_for_status(record.pk, timeout=300)
    assert finished.status == "ready", finished.error_message
    assert Chunk.objects.filter(file=record).count() == finished.progress_total
    assert finished.progress_done == finished.progress_total
    assert not Chunk.objects.filter(file=record, embedding__isnull=True).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_deleting_a_file_stops_its_embedding_and_its_conversion(
    celery_worker: WorkerProcess,
) -> None:
    source = factories.data_source()
    embedding = factories.upload(source, "archive.md", notes_markdown(800, seed=12)).file
    wait_until(lambda: _embedded(embedding) > 0, timeout=180, what="embedding starts")
    ingestion.file_delete(file=embedding, reason="withdrawn")
    embedding.refresh_from_db()
    assert embedding.status == "failed" and embedding.deleted_at is not None
    assert embedding.error_message == "cancelled: the document was deleted by system"
    assert _settled(embedding, quiet=5) < 15
    assert _embedded(embedding) < Chunk.objects.filter(file=embedding).count()
    assert not ingestion.retry_can_help(embedding), "a deleted file is not retried"

    converting = factories.upload(source, "inspections.pdf", _slow_to_read_pdf(900)).file
    wait_until(
        lambda: File.objects.get(pk=converting.pk).progress_done > 0,
        timeout=120,
        what="conversion reports pages",
    )
    ingestion.file_delete(file=converting, reason="withdrawn")
    time.sleep(3)  # a progress report every half second: the sandbox is stopped by then
    converting.refresh_from_db()
    assert converting.status == "failed" and not converting.markdowns.exists()
    assert converting.progress_done < converting.progress_total
