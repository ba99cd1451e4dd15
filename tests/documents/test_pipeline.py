"""The ingestion pipeline end to end through a real Celery worker process."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from django.db import connection
from django.http import FileResponse
from rest_framework.test import APIClient

from documents.models import Chunk, File, Location
from tests import factories
from tests.conftest import wait_for_status
from tests.support import squad
from tests.support.http import streamed
from tests.support.invariants import assert_chunk_invariants
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _assert_ingested(record: File) -> list[Chunk]:
    markdown = record.markdowns.get(is_active=True)
    chunks = list(Chunk.objects.filter(markdown=markdown).order_by("position"))
    assert chunks, "no chunks"
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        locations = list(Location.objects.filter(chunk=chunk).order_by("ordinal"))
        assert_chunk_invariants(markdown.markdown, chunk, locations, markdown.body_start)
        assert chunk.content_hash == hashlib.sha256(chunk.chunk_text.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), min(vector_dims(embedding)), 0"
            " FROM documents_chunk WHERE markdown_id = %s AND embedding IS NOT NULL",
            [markdown.pk],
        )
        embedded, dims, _ = cursor.fetchone()
    assert embedded == len(chunks) and dims == 384
    return chunks


def test_markdown_uploaded_through_the_api_reaches_ready(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    org = factories.organization()
    factories.data_source(org)
    key = factories.api_key(org)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    data = (corpus / "docling/md/inline_and_formatting.md").read_bytes()
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(
        "/v1/flow/files",
        {
            "file": SimpleUploadedFile("inline.md", data),
            "data_source": "Human Resources",
        },
        format="multipart",
    )
    assert response.status_code == 202
    record = wait_for_status(response.json()["file_id"])
    assert record.status == "ready", record.error_message
    chunks = _assert_ingested(record)
    assert any("Contribution guideline example" in c.hierarchy for c in chunks)
    body = client.get(f"/v1/flow/files/{record.pk}").json()
    assert body["stage"] == "ready" and body["progress"] == {
        "done": len(chunks),
        "total": len(chunks),
    }
    record.data_source.vector_database.refresh_from_db()
    assert len(record.data_source.vector_database.index_hash) == 64


def test_plain_text_and_front_matter_are_ingested(celery_worker: WorkerProcess) -> None:
    source = factories.data_source()
    text = factories.upload(source, "notes.txt", b"Plain notes.\nSecond line of notes.\n").file
    front = factories.upload(
        source, "fm.md", b"---\ntitle: Handbook\n---\n# Leave\n\nTwenty days a year.\n"
    ).file
    for record in (wait_for_status(text.pk), wait_for_status(front.pk)):
        assert record.status == "ready", record.error_message
        _assert_ingested(record)
    markdown = front.markdowns.get()
    assert markdown.front_matter == "title: Handbook\n"
    chunk = Chunk.objects.get(markdown=markdown)
    assert chunk.chunk_text.startswith("# Leave") and chunk.line_number_start == 4
    assert chunk.hierarchy == ["Leave"]


def test_a_new_revision_supersedes_the_old_one_which_stays_readable(
    celery_worker: WorkerProcess,
) -> None:
    source = factories.data_source()
    key = factories.api_key(source.organization)
    first = factories.upload(source, "policy.md", b"# Policy\n\nKeep records five years.\n").file
    assert wait_for_status(first.pk).status == "ready"
    second = factories.upload(source, "policy.md", b"# Policy\n\nKeep records seven years.\n").file
    assert wait_for_status(second.pk).status == "ready"
    first.refresh_from_db()
    assert second.revision == 2 and second.superseded_at is None
    assert first.superseded_at is not None
    assert Chunk.objects.filter(file=first).exists(), "old revision's chunks are kept for audit"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    old = client.get(f"/v1/flow/files/{first.pk}/content")
    assert isinstance(old, FileResponse)
    assert streamed(old) == b"# Policy\n\nKeep records five years.\n"
    assert client.get(f"/v1/flow/files/{first.pk}").json()["is_current"] is False


def test_a_failed_new_revision_leaves_the_previous_one_current(
    celery_worker: WorkerProcess,
) -> None:
    source = factories.data_source()
    key = factories.api_key(source.organization)
    first = factories.upload(source, "policy.md", b"# Policy\n\nKeep records five years.\n").file
    assert wait_for_status(first.pk).status == "ready"
    broken = b"# Policy\n\n" + b"All good text. " * 1000 + bytes(range(128, 256)) * 40
    second = factories.upload(source, "policy.md", broken).file
    assert second.revision == 2
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    # while the new revision ingests, and after it failed, answers come from the first
    assert client.get(f"/v1/flow/files/{second.pk}").json()["is_current"] is False
    assert wait_for_status(second.pk).status == "failed"
    assert client.get(f"/v1/flow/files/{first.pk}").json()["is_current"] is True
    assert client.get(f"/v1/flow/files/{second.pk}").json()["is_current"] is False


def test_a_bad_file_fails_with_a_reason_and_the_next_one_still_ingests(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    source = factories.data_source()
    # valid UTF-8 where the upload sniffs it, mostly binary further in: only conversion sees it
    broken = b"# Title\n\n" + b"All good text. " * 1000 + bytes(range(128, 256)) * 40
    bad = factories.upload(source, "bad.md", broken).file
    good = factories.upload(source, "good.md", (corpus / "docling/md/duck.md").read_bytes()).file
    bad = wait_for_status(bad.pk)
    assert bad.status == "failed"
    assert "not valid UTF-8" in bad.error_message and "offset" in bad.error_message
    assert wait_for_status(good.pk).status == "ready"


def test_a_worker_killed_mid_embedding_loses_and_duplicates_nothing(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    """kill -9 the worker during embedding; a restarted worker finishes the file exactly once."""
    source = factories.data_source()
    articles = squad.load(corpus)
    document = "\n".join(squad.article_markdown(a) for a in articles[:3]).encode()
    record = factories.upload(source, "squad.md", document).file
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        record.refresh_from_db()
        if record.status == "embedding" and 0 < record.progress_done < record.progress_total:
            break
        time.sleep(0.05)
    assert record.status == "embedding", f"never caught mid-embedding: {record.status}"
    celery_worker.kill()
    record.refresh_from_db()
    total, done_at_kill = record.progress_total, record.progress_done
    assert done_at_kill < total
    celery_worker.start()
    record = wait_for_status(record.pk, timeout=180)
    assert record.status == "ready", record.error_message
    chunks = _assert_ingested(record)
    assert len(chunks) == total
    assert Chunk.objects.filter(file=record).count() == total, "no duplicate chunks"
    assert record.markdowns.count() == 1


def _slow_to_read_pdf(pages: int) -> bytes:
    """Pages that take PyMuPDF as long as dense text to read but hold one visible
    line each: the rest is invisible text (render mode 3), which is left out of the
    Markdown, so the file converts slowly and embeds quickly."""
    import pymupdf

    document = pymupdf.open()
    hidden = "\n".join(f"hidden layer word {k} " * 6 for k in range(60))
    for number in range(pages):
        page = document.new_page()
        page.insert_text((40, 40), f"Inspection note {number}: valve {number % 17} checked.")
        page.insert_text((40, 80), hidden, fontsize=8, render_mode=3)
    return document.tobytes()


def test_a_long_conversion_shows_its_pages_while_it_runs(celery_worker: WorkerProcess) -> None:
    """The worker saves the sandbox's page count as it converts: the API and the
    library page show "n of N pages converted" before conversion ends."""
    org = factories.organization()
    source = factories.data_source(org)
    key = factories.api_key(org)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    record = factories.upload(source, "inspections.pdf", _slow_to_read_pdf(900)).file
    seen: list[tuple[str, int, int]] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        body = client.get(f"/v1/flow/files/{record.pk}").json()
        progress = body["progress"]
        seen.append((body["stage"], progress["done"], progress["total"]))
        if body["stage"] in ("ready", "failed"):
            break
        time.sleep(0.02)
    assert seen[-1][0] == "ready", seen[-1]
    converting = [(done, total) for stage, done, total in seen if stage == "converting"]
    assert any(0 < done < total == 900 for done, total in converting), sorted(set(converting))
    counts = [done for done, total in converting if total]
    assert counts == sorted(counts), "the count never goes back"
    assert ("chunking", 900, 900) in seen or any(s == "embedding" for s, _, _ in seen)
