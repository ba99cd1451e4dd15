"""A converter upgrade re-runs conversion for existing files (``reconvert``), through a
real worker, without touching what past answers cited."""

from __future__ import annotations

import getpass
import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit.models import DocumentEvent, EvidenceEntry
from citations.llm_apps import app_create
from citations.services import query_execute
from documents import ingestion
from documents.converters.pdf import PdfConverter
from documents.ingestion import file_delete, file_reconvert
from documents.models import Chunk, DataSource, DocumentMarkdown, File
from tests import factories
from tests.conftest import wait_for_status
from tests.support.tamper import triggers_off
from tests.support.worker import WorkerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

SURVEY = "docling/pdf/table_mislabeled_as_picture.pdf"
QUESTION = "Who supervises, coaches or mentors private practitioners taking legal aid cases?"


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("reconvert", *args, stdout=out)
    return out.getvalue()


def _ingested_by_an_older_converter(source: DataSource, corpus: Path) -> File:
    """A ready PDF whose Markdown is recorded as the previous converter version's:
    the state every PDF ingested before an upgrade is in."""
    record = factories.upload(source, "survey.pdf", (corpus / SURVEY).read_bytes()).file
    assert wait_for_status(record.pk).status == "ready"
    with triggers_off():
        DocumentMarkdown.objects.filter(file=record, is_active=True).update(
            converter_version="1.1.0"
        )
    return record


def test_reconvert_publishes_a_new_conversion_and_old_answers_keep_their_chunks(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    org = factories.organization()
    source = factories.data_source(org, "Legal aid")
    record = _ingested_by_an_older_converter(source, corpus)
    old_markdown = record.markdowns.get(is_active=True)
    old_chunks = dict(Chunk.objects.filter(markdown=old_markdown).values_list("pk", "chunk_text"))
    app = app_create(organization=org, name="Legal", data_source_names=["Legal aid"])
    before = query_execute(app=app, question=QUESTION)
    cited = list(before.quoted_sources.values_list("chunk_id", "chunk_text"))
    assert cited and all(chunk_id in old_chunks for chunk_id, _text in cited)

    listing = _run("--dry-run")
    assert f"outdated  survey.pdf ({record.pk}): pymupdf-markdown 1.1.0 -> " in listing
    assert listing.rstrip().endswith("1 file(s) to convert again")
    assert wait_for_status(record.pk).markdowns.get(is_active=True) == old_markdown  # dry run

    output = _run("--kind", "pdf", "--wait", "--timeout", "300")
    assert f"queued    survey.pdf ({record.pk})" in output
    assert f"ready     survey.pdf ({record.pk})" in output
    assert output.rstrip().endswith("1 file(s) queued to convert again")
    # the document's ledger says who asked for it and why, chained like every event
    event = DocumentEvent.objects.get(file=record, kind="reconversion")
    assert event.actor == "system" and event.organization_id == org.pk
    assert event.reason == (
        f"reconvert command run by {getpass.getuser()}: "
        f"pymupdf-markdown 1.1.0 -> pymupdf-markdown {PdfConverter.version}"
    )
    assert EvidenceEntry.objects.filter(
        record_table=DocumentEvent._meta.db_table, record_id=str(event.pk)
    ).exists()
    record.refresh_from_db()
    new_markdown = record.markdowns.get(is_active=True)
    assert new_markdown.converter_version == PdfConverter.version != "1.1.0"
    assert record.status == "ready" and record.error_message == ""
    # the old conversion and its chunks stay, unchanged and no longer retrievable
    old_markdown.refresh_from_db()
    assert not old_markdown.is_active
    kept = dict(Chunk.objects.filter(markdown=old_markdown).values_list("pk", "chunk_text"))
    assert kept == old_chunks
    assert not Chunk.objects.filter(markdown=old_markdown, is_retrievable=True).exists()
    assert Chunk.objects.filter(markdown=new_markdown, is_retrievable=True).exists()
    # the new converter's Markdown: the survey's checkboxes are list items now
    assert "\ufffd" not in new_markdown.markdown and "- They supervise" in new_markdown.markdown
    # the past answer cites what it cited; a new one cites the new conversion
    assert list(before.quoted_sources.values_list("chunk_id", "chunk_text")) == cited
    after = query_execute(app=app, question=QUESTION)
    assert after.quoted_sources.exists()
    assert all(
        Chunk.objects.get(pk=chunk_id).markdown_id == new_markdown.pk
        for chunk_id in after.quoted_sources.values_list("chunk_id", flat=True)
    )
    assert _run().rstrip().endswith("0 file(s) queued to convert again")  # nothing left
    _index_hash_follows_the_chunks()


def test_a_failed_reconversion_keeps_the_file_ready_on_its_previous_conversion(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    source = factories.data_source()
    record = _ingested_by_an_older_converter(source, corpus)
    old_markdown = record.markdowns.get(is_active=True)
    chunks = Chunk.objects.filter(markdown=old_markdown).count()
    # the worker's conversion fails as a hostile file's would: its stored bytes vanish
    with triggers_off():
        File.objects.filter(pk=record.pk).update(storage_key=f"{record.storage_key}-missing")
    with pytest.raises(CommandError, match="1 file.s. could not be converted again"):
        _run("--wait", "--timeout", "120")
    record.refresh_from_db()
    assert record.status == "ready"
    assert record.error_message.startswith(
        "converting again failed; the previous conversion stays in use: "
    )
    assert record.markdowns.get(is_active=True) == old_markdown
    assert Chunk.objects.filter(markdown=old_markdown, is_retrievable=True).count() == chunks
    assert (record.progress_done, record.progress_total) == (chunks, chunks)


def _index_hash_follows_the_chunks() -> None:
    """Every index's running digest is its retrievable chunks' (the command fails if not)."""
    out = io.StringIO()
    call_command("rebuild_index_hash", "--check", stdout=out)
    assert "match" in out.getvalue()


def _held(record: File, *, status: str = "pending", hours: float = 0) -> None:
    """A stage's status with no message queued, and fresh (the worker's stalled-file
    sweep leaves it alone): only this test process runs its stages."""
    lease = timezone.now() + timedelta(hours=hours) if hours else None
    File.objects.filter(pk=record.pk).update(
        status=status, lease_expires_at=lease, updated_at=timezone.now()
    )


def test_a_revision_superseded_while_converted_again_stays_hidden(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    source = factories.data_source()
    first = _ingested_by_an_older_converter(source, corpus)
    ready_at = File.objects.get(pk=first.pk).ready_at
    assert ready_at is not None
    _held(first)
    assert ingestion.file_convert(file_id=str(first.pk))
    assert ingestion.file_chunk(file_id=str(first.pk))
    _held(first, status="embedding", hours=1)  # while the newer revision is ingested
    replacement = corpus / "markitdown/test_files/RECEIPT-2024-TXN-98765_retail_purchase.pdf"
    second = factories.upload(source, "survey.pdf", replacement.read_bytes()).file
    assert wait_for_status(second.pk).status == "ready"
    _held(first, status="embedding")
    assert ingestion.file_embed(file_id=str(first.pk))
    first.refresh_from_db()
    assert first.status == "ready" and first.superseded_at is not None
    assert first.ready_at == ready_at, "ready_at: when it first became ready"
    assert not Chunk.objects.filter(file=first, is_retrievable=True).exists()
    assert Chunk.objects.filter(file=second, is_retrievable=True).exists()
    superseded_queued = file_reconvert(file=first, reason="test")
    assert not superseded_queued, "a superseded revision is not converted again"
    _index_hash_follows_the_chunks()


def test_converting_again_with_a_version_already_published_reuses_it(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    """An old worker still running, or a rollback: no duplicate conversion, no crash."""
    source = factories.data_source()
    record = factories.upload(source, "survey.pdf", (corpus / SURVEY).read_bytes()).file
    assert wait_for_status(record.pk).status == "ready"
    current = record.markdowns.get(is_active=True)
    _held(record)
    assert ingestion.file_convert(file_id=str(record.pk)) is True
    record.refresh_from_db()
    assert record.status == "ready" and record.error_message == ""
    assert list(record.markdowns.all()) == [current]

    # a rollback: the version in use now is the one an inactive conversion was made by
    with triggers_off():
        DocumentMarkdown.objects.filter(pk=current.pk).update(converter_version="9.9.0")
    _held(record)
    assert ingestion.file_convert(file_id=str(record.pk))
    assert ingestion.file_chunk(file_id=str(record.pk))
    assert ingestion.file_embed(file_id=str(record.pk))
    rolled_back = record.markdowns.get(is_active=True)
    assert rolled_back.converter_version == PdfConverter.version
    with triggers_off():
        DocumentMarkdown.objects.filter(pk=rolled_back.pk).update(converter_version="9.9.1")
    with triggers_off():
        DocumentMarkdown.objects.filter(pk=current.pk).update(
            converter_version=PdfConverter.version
        )
    _held(record)
    assert ingestion.file_convert(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "ready" and record.error_message == ""
    assert record.markdowns.get(is_active=True) == current  # published again, not re-made
    assert Chunk.objects.filter(markdown=current, is_retrievable=True).exists()
    assert not Chunk.objects.filter(markdown=rolled_back, is_retrievable=True).exists()
    _index_hash_follows_the_chunks()


def test_reconvert_refuses_bad_input_and_leaves_failed_and_deleted_files_alone(
    celery_worker: WorkerProcess, corpus: Path
) -> None:
    with pytest.raises(CommandError, match="no organization named 'Nobody'"):
        _run("--organization", "Nobody")
    with pytest.raises(CommandError, match="invalid choice: 'exe'"):
        _run("--kind", "exe")
    for limit in ("0", "-3"):
        with pytest.raises(CommandError, match="--limit must be at least 1"):
            _run("--limit", limit)
    with pytest.raises(CommandError, match="invalid int value: 'many'"):
        _run("--limit", "many")
    source = factories.data_source()
    failed = _ingested_by_an_older_converter(source, corpus)
    File.objects.filter(pk=failed.pk).update(status="failed", error_message="earlier failure")
    assert not file_reconvert(file=failed, reason="test")
    deleted = factories.upload(source, "notes.md", b"# Notes\n\nNothing yet.\n").file
    assert wait_for_status(deleted.pk).status == "ready"
    with triggers_off():
        DocumentMarkdown.objects.filter(file=deleted).update(converter_version="0.9.0")
    file_delete(file=deleted, reason="withdrawn")
    assert not file_reconvert(file=deleted, reason="test")
    assert _run().rstrip().endswith("0 file(s) queued to convert again")
    assert File.objects.get(pk=failed.pk).error_message == "earlier failure"


def _markdown_files(source: DataSource, count: int) -> list[File]:
    """``count`` ready Markdown files recorded as an older converter's conversion."""
    records = [
        factories.upload(
            source, f"note-{n}.md", f"# Note {n}\n\nThe note number {n} says little.\n".encode()
        ).file
        for n in range(count)
    ]
    for record in records:
        assert wait_for_status(record.pk).status == "ready"
    with triggers_off():
        DocumentMarkdown.objects.filter(file__in=records).update(converter_version="0.9.0")
    return records


def test_reconvert_limit_queues_the_oldest_and_says_how_many_are_left(
    celery_worker: WorkerProcess,
) -> None:
    first, second, third = _markdown_files(factories.data_source(), 3)
    listing = _run("--dry-run", "--limit", "2")
    assert f"outdated  note-0.md ({first.pk})" in listing
    assert f"outdated  note-1.md ({second.pk})" in listing and "note-2.md" not in listing
    assert "2 file(s) to convert again\n1 more outdated file(s) left past --limit" in listing
    output = _run("--limit", "1", "--wait", "--timeout", "120")
    assert f"ready     note-0.md ({first.pk})" in output and "note-1.md" not in output
    assert "2 more outdated file(s) left past --limit: run again" in output
    assert DocumentEvent.objects.filter(kind="reconversion").count() == 1
    assert File.objects.get(pk=third.pk).markdowns.get(is_active=True).converter_version == "0.9.0"

    # the oldest left keeps failing to convert again: it goes last, not first every time
    File.objects.filter(pk=second.pk).update(error_message="conversion timed out")
    listing = _run("--dry-run", "--limit", "1")
    assert f"outdated  note-2.md ({third.pk})" in listing and "note-1.md" not in listing


def test_a_reconversion_backlog_does_not_hold_back_a_new_upload(
    celery_worker: WorkerProcess,
) -> None:
    """Re-conversions wait on the background queue, which the worker takes from
    in turn with the uploads' queue: on one queue, the upload's three stages would
    each wait behind the backlog's and it would be ready about last."""
    source = factories.data_source()
    backlog = _markdown_files(source, 8)
    assert _run().rstrip().endswith("8 file(s) queued to convert again")
    upload = factories.upload(source, "urgent.md", b"# Urgent\n\nRead this first.\n").file
    assert wait_for_status(upload.pk).status == "ready"
    still_converting = File.objects.filter(pk__in=[r.pk for r in backlog]).exclude(status="ready")
    assert still_converting.count() >= 4, "the upload waited behind the re-conversions"
    for record in backlog:
        assert wait_for_status(record.pk).status == "ready"
        assert record.markdowns.get(is_active=True).converter_version != "0.9.0"
