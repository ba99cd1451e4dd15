"""Per-file limits: a runaway file fails with a reason naming the limit, keeps its
bytes, and can be retried once an operator raises the limit; the defaults let a
1,000-page PDF through and refuse a 22 MB single-line Markdown."""

from __future__ import annotations

import hashlib
import re

import pymupdf
import pytest
from django.conf import settings
from django.test import override_settings

from documents import ingestion
from documents.chunking import chunk_markdown
from documents.markdown_structure import MarkdownStructure
from documents.models import Chunk, File
from documents.storage import original_open
from tests import factories
from tests.support.generated import runaway_line
from tests.support.tamper import triggers_off

pytestmark = pytest.mark.django_db

RUNAWAY_BYTES = 100_000  # one line: about a hundred chunks at the default chunk size


def _stored_bytes_intact(record: File, data: bytes) -> None:
    with original_open(record.storage_key) as handle:
        stored = handle.read()
    assert hashlib.sha256(stored).hexdigest() == record.sha256 == hashlib.sha256(data).hexdigest()


def test_a_runaway_file_past_the_chunk_limit_fails_naming_it_and_keeps_its_bytes() -> None:
    data = runaway_line(RUNAWAY_BYTES)
    record = factories.upload(factories.data_source(), "export.md", data).file
    with override_settings(PROVENANCE_MAX_CHUNKS_PER_FILE=50):
        assert ingestion.file_convert(file_id=str(record.pk))
        assert ingestion.file_chunk(file_id=str(record.pk)) is False
        record.refresh_from_db()
        assert record.status == "failed"
        assert record.refused_by == "PROVENANCE_MAX_CHUNKS_PER_FILE=50"
        assert "more than the 50 a file may make (PROVENANCE_MAX_CHUNKS_PER_FILE)" in (
            record.error_message
        )
        assert record.error_message.startswith("the document makes ")
        assert not Chunk.objects.filter(file=record).exists()
        assert not ingestion.retry_can_help(record), "the same limit refuses it again"
    _stored_bytes_intact(record, data)

    # an operator raises the limit: retrying now helps, and the file goes through
    assert ingestion.retry_can_help(record)
    ingestion.file_retry(file=record)
    for stage in (ingestion.file_convert, ingestion.file_chunk):
        assert stage(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "embedding" and record.refused_by == "" and record.error_message == ""
    assert Chunk.objects.filter(file=record).count() == record.progress_total > 50


@override_settings(PROVENANCE_MAX_MARKDOWN_BYTES=50_000)
def test_a_runaway_file_past_the_markdown_limit_fails_before_anything_is_stored() -> None:
    data = runaway_line(RUNAWAY_BYTES, seed=1)
    record = factories.upload(factories.data_source(), "dump.md", data).file
    assert ingestion.file_convert(file_id=str(record.pk)) is False
    record.refresh_from_db()
    assert record.status == "failed"
    assert record.refused_by == "PROVENANCE_MAX_MARKDOWN_BYTES=50000"
    assert re.fullmatch(
        r"the document makes 99,9\d\d bytes of Markdown, more than the 50,000 a file may "
        r"make \(PROVENANCE_MAX_MARKDOWN_BYTES\): .*",
        record.error_message,
    ), record.error_message
    assert not record.markdowns.exists() and not Chunk.objects.filter(file=record).exists()
    _stored_bytes_intact(record, data)


def test_a_converted_again_file_past_a_limit_stays_ready_on_its_previous_conversion() -> None:
    record = factories.upload(factories.data_source(), "notes.md", runaway_line(3_000)).file
    for stage in (ingestion.file_convert, ingestion.file_chunk, ingestion.file_embed):
        assert stage(file_id=str(record.pk))
    with triggers_off():
        record.markdowns.update(converter_version="0.0.1")
    assert ingestion.file_reconvert(file=record, reason="test: upgrade")
    with override_settings(PROVENANCE_MAX_CHUNKS_PER_FILE=2):
        assert ingestion.file_convert(file_id=str(record.pk))
        assert ingestion.file_chunk(file_id=str(record.pk)) is False
    record.refresh_from_db()
    assert record.status == "ready" and record.markdowns.get(is_active=True)
    assert "PROVENANCE_MAX_CHUNKS_PER_FILE" in record.error_message
    assert record.error_message.startswith("converting again failed; the previous conversion")


SAMPLE_PAGES = 100  # converted for real; a 1,000-page file of them makes ten times as much


def _dense_pdf(pages: int) -> bytes:
    """Pages of a typical dense report: a heading and 45 lines of prose each."""
    document = pymupdf.open()
    line = "the committee reviewed the retention schedule and the supplier audit findings"
    for number in range(pages):
        page = document.new_page()
        page.insert_text((72, 60), f"Section {number + 1}", fontsize=16)
        for row in range(45):
            page.insert_text((50, 90 + row * 15), f"{row} {line} {number}", fontsize=9)
    data = document.tobytes()
    document.close()
    return data


def test_the_default_limits_let_a_thousand_page_pdf_through_and_refuse_a_runaway_line() -> None:
    """The defaults against the figures they are for: a 22 MB single-line export
    (~41,000 chunks) is refused; a dense PDF of 1,000 pages (ten times what a
    100-page one makes, converted and chunked here) passes both limits."""
    assert ingestion.MARKDOWN_LIMIT.refusal(22 * 1000 * 1000) is not None
    assert ingestion.CHUNKS_LIMIT.refusal(41_236) is not None
    source = factories.data_source()
    record = factories.upload(source, "report.pdf", _dense_pdf(SAMPLE_PAGES)).file
    assert ingestion.file_convert(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "chunking", record.error_message
    markdown = record.markdowns.get()
    spans = chunk_markdown(
        MarkdownStructure(markdown.markdown, body_start=markdown.body_start),
        target=settings.PROVENANCE_CHUNK_TARGET_TOKENS,
        overlap=settings.PROVENANCE_CHUNK_OVERLAP_TOKENS,
    )
    scale = 1000 // SAMPLE_PAGES
    size, chunks = len(markdown.markdown.encode()) * scale, len(spans) * scale
    assert ingestion.MARKDOWN_LIMIT.refusal(size) is None
    assert ingestion.CHUNKS_LIMIT.refusal(chunks) is None
    print(f"\n1,000 dense pages: {size:,} bytes of Markdown, {chunks:,} chunks")
