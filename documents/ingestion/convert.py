"""Stage 1, convert: the original bytes to a draft Markdown with its location
map and boxes (in a sandbox), under the stage's lease."""

from __future__ import annotations

import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import transaction

from documents.converters import Conversion, ConversionError
from documents.converters.base import ProgressReport
from documents.ingestion.limits import MARKDOWN_LIMIT, LimitExceeded, limit_check
from documents.ingestion.page_words import page_words_read
from documents.ingestion.publish import publish
from documents.ingestion.status import advance, file_fail, ready_on
from documents.leases import Lease, LeaseLost, heartbeat, lease_claim
from documents.models import DocumentMarkdown, File, FileStatus, SourceBoxes
from documents.originals import OriginalAltered, original_bytes
from documents.titles import document_title

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


def file_convert(*, file_id: str) -> bool:
    """Convert the original bytes to Markdown with a location map (in a sandbox)."""
    lease = lease_claim(
        file_id, statuses=(FileStatus.PENDING, FileStatus.CONVERTING), working=FileStatus.CONVERTING
    )
    if lease is None:
        return False
    with heartbeat(lease):
        try:
            return _convert_held(lease)
        except LeaseLost:
            logger.info("conversion of %s stopped: cancelled or taken over", file_id)
            return False


def _convert_held(lease: Lease) -> bool:
    file_id = lease.file_id
    record = File.objects.get(pk=file_id)
    File.objects.filter(pk=file_id).update(
        attempts=record.attempts + 1, error_message="", progress_done=0, progress_total=0
    )
    try:
        data = original_bytes(record, where="a conversion")
    except OriginalAltered as exc:  # converting other bytes would cite other text
        file_fail(file_id=file_id, reason=exc.message, lease=lease)
        return False
    # a PDF's page words are read in a second sandbox child on the other core while
    # it converts, so the chunk stage does not wait for them
    with ThreadPoolExecutor(max_workers=1) as reader:
        words = reader.submit(page_words_read, data, file_id) if record.kind == "pdf" else None
        try:
            conversion = _convert(data, record.kind, progress=_conversion_progress(lease))
            limit_check(MARKDOWN_LIMIT, len(conversion.markdown.encode()))
        except ConversionError as exc:
            refused_by = converter_label(record.kind) if exc.permanent else ""
            file_fail(file_id=file_id, reason=exc.reason, refused_by=refused_by, lease=lease)
            return False
        except LimitExceeded as exc:
            file_fail(file_id=file_id, reason=exc.reason, refused_by=exc.limit.label, lease=lease)
            return False
        page_words = words.result() if words else None
    return _markdown_store(lease, record, conversion, page_words)


def converter_label(kind: str) -> str:
    """``name version`` of the converter that reads ``kind`` now."""
    from documents.converters import converter_for

    converter = converter_for(kind)
    return f"{converter.name} {converter.version}"


def _convert(data: bytes, kind: str, *, progress: ProgressReport | None = None) -> Conversion:
    from documents.converters import converter_for

    if kind in {"markdown", "text"}:  # no parser to contain: convert in-process
        return converter_for(kind).convert(data)
    from documents.converters.sandbox import convert_isolated

    return convert_isolated(
        data,
        kind,
        timeout_s=settings.PROVENANCE_CONVERT_TIMEOUT_SECONDS,
        memory_mb=settings.PROVENANCE_CONVERT_MEMORY_MB,
        progress=progress,
    )


def _conversion_progress(lease: Lease) -> ProgressReport:
    """Pages converted so far, saved on the file as the sandbox reports them (every
    half second at most): a long conversion is not a silent one. It is also where a
    conversion hears that it was cancelled: :class:`LeaseLost` stops the sandbox."""

    def save(done: int, total: int) -> None:
        if not lease.rows().update(progress_done=done, progress_total=total):
            raise LeaseLost(lease.file_id)

    return save


@transaction.atomic
def _markdown_store(
    lease: Lease, record: File, conversion: Conversion, page_words: bytes | None = None
) -> bool:
    """Store the draft Markdown and move on to chunking; False (nothing stored) if
    the file was cancelled, deleted or taken over meanwhile."""
    if not lease.hold_locked():
        return False
    if not conversion.markdown[conversion.body_start :].strip():
        file_fail(
            file_id=str(record.pk),
            reason="the document contains no text",
            refused_by=converter_label(record.kind),
            lease=lease,
        )
        return True
    published = DocumentMarkdown.objects.filter(
        file=record,
        converter=conversion.converter,
        converter_version=conversion.converter_version,
        published_at__isnull=False,
    ).first()
    if published is not None:  # converted again by a version it had (a rollback, an old worker)
        if published.is_active:
            ready_on(lease.rows(), published)
        else:  # its chunks and vectors are all still stored: publish it again
            publish(lease, published)
        return True
    markdown, _ = DocumentMarkdown.objects.update_or_create(
        file=record,
        converter=conversion.converter,
        converter_version=conversion.converter_version,
        published_at__isnull=True,
        defaults={
            "markdown": conversion.markdown,
            "sha256": hashlib.sha256(conversion.markdown.encode()).hexdigest(),
            "line_pages": conversion.line_pages,
            "front_matter": conversion.front_matter,
            "body_start": conversion.body_start,
            "page_count": conversion.page_count,
            "metadata": _with_title(conversion),
        },
    )
    spans = [
        [s.char_start, s.char_end, s.page_number, s.x0, s.y0, s.x1, s.y1] for s in conversion.spans
    ]
    SourceBoxes.objects.update_or_create(
        markdown=markdown, defaults={"spans": spans, "page_words": page_words}
    )
    pages = conversion.page_count or 0
    advance(lease.rows(), to=FileStatus.CHUNKING, progress_done=pages, progress_total=pages)
    return True


def _with_title(conversion: Conversion) -> dict:
    """The converter's metadata with the document's title in it (its own, else the
    first heading): what an answer's sources show as ``document.title``."""
    title = document_title(conversion.metadata, conversion.markdown, conversion.body_start)
    return {**conversion.metadata, "title": title} if title else dict(conversion.metadata)


def draft_markdown(file_id: str, *, text: bool = True) -> DocumentMarkdown | None:
    """The conversion being ingested; without its ``text`` (the embed stage, which
    reads it once per slice, needs only its id)."""
    drafts = DocumentMarkdown.objects.filter(file_id=file_id, published_at__isnull=True)
    if not text:
        drafts = drafts.only("id", "file_id", "created_at")
    return drafts.order_by("-created_at").first()
