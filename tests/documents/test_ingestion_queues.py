"""Which queue the pipeline's messages go to: uploads to the default queue,
re-conversions to the background one, also when a crashed one is resumed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from celery.signals import before_task_publish
from django.conf import settings
from django.utils import timezone
from pytest_django import DjangoCaptureOnCommitCallbacks, Settings

from documents import ingestion
from documents.models import DataSource, DocumentMarkdown, File
from tests import factories
from tests.support.tamper import triggers_off

pytestmark = pytest.mark.django_db


@pytest.fixture
def published() -> Iterator[list[tuple[str, str, str]]]:
    """(task name, file id, routing key) of every task message sent meanwhile,
    the chain's later stages included (they are sent when a stage ends)."""
    seen: list[tuple[str, str, str]] = []

    def record(
        body: Any,
        routing_key: str,
        headers: dict[str, Any],
        **_: object,
    ) -> None:
        seen.append((headers["task"].rsplit(".", 1)[-1], body[0][0], routing_key))
        for stage in body[2].get("chain") or []:
            name = stage["task"].rsplit(".", 1)[-1]
            seen.append((name, stage["args"][0], stage["options"].get("queue", "celery")))

    before_task_publish.connect(record, weak=False)
    try:
        yield seen
    finally:
        before_task_publish.disconnect(record)


def _ready(source: DataSource, name: str) -> File:
    """A file ingested in this process, stage by stage."""
    record = factories.upload(source, name, b"# Notes\n\nThe notes say very little here.\n").file
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "ready"
    return record


def _stalled(record: File) -> None:
    """Mid-conversion with an expired lease: its worker died."""
    File.objects.filter(pk=record.pk).update(
        status="converting", lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def test_uploads_go_to_the_default_queue_and_reconversions_to_the_background(
    published: list[tuple[str, str, str]],
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    source = factories.data_source()
    with django_capture_on_commit_callbacks(execute=True):
        upload = factories.upload(source, "new.md", b"# New\n\nA new file arrives.\n").file
    assert sorted(published) == [
        ("chunk_file", str(upload.pk), "celery"),
        ("convert_file", str(upload.pk), "celery"),
        ("embed_file", str(upload.pk), "celery"),
    ]
    converted = _ready(source, "old.md")
    published.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert ingestion.file_reconvert(file=converted, reason="test: 0.9.0 -> 1.0.0")
    background = settings.PROVENANCE_BACKGROUND_QUEUE
    assert sorted(published) == [
        ("chunk_file", str(converted.pk), background),
        ("convert_file", str(converted.pk), background),
        ("embed_file", str(converted.pk), background),
    ]

    # both die mid-conversion; the sweep sends each back to the queue it came from
    published.clear()
    for record in (upload, converted):
        _stalled(record)
    assert set(ingestion.ingestion_resume_stalled()) == {str(upload.pk), str(converted.pk)}
    assert {(name, queue) for name, file_id, queue in published if file_id == str(upload.pk)} == {
        ("convert_file", "celery"),
        ("chunk_file", "celery"),
        ("embed_file", "celery"),
    }
    assert {
        (name, queue) for name, file_id, queue in published if file_id == str(converted.pk)
    } == {("convert_file", background), ("chunk_file", background), ("embed_file", background)}


def test_embedding_helpers_follow_the_queue_of_the_file(
    published: list[tuple[str, str, str]], settings: Settings
) -> None:
    """The embed stage asks idle workers to help; for a re-conversion they are asked
    on the background queue too, or they would run ahead of new uploads."""
    settings.PROVENANCE_EMBED_BATCH_SIZE = 1
    settings.PROVENANCE_EMBED_HELPERS = 1
    rule = "Part {n} of the handbook explains one more rule in words. "
    sections = "".join(f"# Part {n}\n\n" + rule.format(n=n) * 60 + "\n\n" for n in range(1, 4))
    source = factories.data_source()
    record = factories.upload(source, "handbook.md", sections.encode()).file
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    assert ("embed_file_share", str(record.pk), "celery") in published

    published.clear()
    # as an older converter's conversion, so converting again makes new chunks; cut
    # to another size, so none has the text of an old one (whose vector it would take)
    with triggers_off():
        DocumentMarkdown.objects.filter(file=record).update(converter_version="0.9.0")
    settings.PROVENANCE_CHUNK_TARGET_TOKENS = 120
    assert ingestion.file_reconvert(file=record, reason="test: 0.9.0 -> 1.0.0")
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    shares = [queue for name, _, queue in published if name == "embed_file_share"]
    assert shares and set(shares) == {settings.PROVENANCE_BACKGROUND_QUEUE}
