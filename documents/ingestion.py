"""The ingestion pipeline's stages: convert → chunk → embed → ready.

Each stage claims its file with a conditional UPDATE (status + an expired or
absent lease, :mod:`documents.leases`), so a stage runs at most once at a time
per file however many workers or duplicate messages there are; a heartbeat of
the process doing the work keeps the lease while it runs, and each stage
replaces its own output atomically, so re-running it never duplicates anything.
A worker that dies leaves a lease that expires; :func:`ingestion_resume_stalled`
re-queues it. The embed stage runs in slices that go to the back of the queue,
so a large file never holds back the files uploaded after it.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Greatest
from django.utils import timezone

from documents.chunk_context import ChunkContexts, embedding_text
from documents.chunking import chunk_markdown
from documents.converters import Conversion, ConversionError
from documents.converters.base import ProgressReport, SourceSpan
from documents.converters.sandbox import pdf_words_isolated
from documents.leases import Lease, LeaseLost, heartbeat, lease_claim, lease_pass
from documents.locating import Locator
from documents.markdown_structure import MarkdownStructure
from documents.models import (
    IN_PROGRESS_STATUSES,
    Chunk,
    DocumentMarkdown,
    File,
    FileStatus,
    Location,
    SourceBoxes,
)
from documents.storage import original_open
from documents.word_boxes import DocumentWords, words_unpack

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from documents.models import ApiKey

logger = logging.getLogger(__name__)
# the smallest batch the end of an embed stage shrinks to: one forward pass of the model
TAIL_BATCH = 16


def ingestion_queue(*, file_id: uuid.UUID, queue: str | None = None) -> None:
    """Queue the pipeline for a file once the current transaction commits, on
    ``queue`` (the default one unless given)."""
    from documents.tasks import pipeline_for

    transaction.on_commit(lambda: pipeline_for(str(file_id), queue=queue).apply_async())


def _advance(rows: QuerySet[File], *, to: str, **fields: object) -> int:
    """Move the file(s) in ``rows`` to status ``to``, releasing the lease."""
    return rows.update(
        status=to, lease_owner="", lease_expires_at=None, updated_at=timezone.now(), **fields
    )


def _in_progress(file_id: str) -> QuerySet[File]:
    return File.objects.filter(pk=file_id, status__in=IN_PROGRESS_STATUSES)


def file_fail(
    *, file_id: str, reason: str, refused_by: str = "", lease: Lease | None = None
) -> None:
    """End ingestion with a reason a person can act on; the bytes stay stored.
    ``refused_by`` names the converter that refuses these bytes for good, or the
    per-file limit they exceed. With ``lease``, only while that claim holds the
    file; without, only while the file is in progress (a cancelled or finished
    file keeps its outcome).

    A file converted again (:func:`file_reconvert`) still has its published
    Markdown and chunks: it goes back to ``ready`` on them, with the reason."""
    logger.warning("ingestion of %s failed: %s", file_id, reason)
    rows = lease.rows() if lease is not None else _in_progress(file_id)
    active = DocumentMarkdown.objects.filter(file_id=file_id, is_active=True).first()
    if active is not None:
        message = f"converting again failed; the previous conversion stays in use: {reason}"
        _ready_on(rows, active, error_message=message[:2000])
        return
    _advance(rows, to=FileStatus.FAILED, error_message=reason[:2000], refused_by=refused_by)


def _ready_on(rows: QuerySet[File], markdown: DocumentMarkdown, **fields: object) -> None:
    """``ready`` on a published conversion, its chunk count as progress."""
    chunks = Chunk.objects.filter(markdown=markdown).count()
    _advance(rows, to=FileStatus.READY, progress_done=chunks, progress_total=chunks, **fields)


# --- per-file limits -------------------------------------------------------------------


@dataclass(frozen=True)
class FileLimit:
    """A bound on what one file may make, so a runaway file (one 20 MB line, a
    generated book) fails with a reason instead of holding every worker for an
    hour; named by its setting, which an operator can raise."""

    setting: str
    unit: str

    @property
    def value(self) -> int:
        return getattr(settings, self.setting)

    @property
    def label(self) -> str:
        """What ``File.refused_by`` records: the limit and its value at the time."""
        return f"{self.setting}={self.value}"

    def refusal(self, amount: int) -> str | None:
        """The reason a file making ``amount`` is refused, or ``None`` within the limit."""
        if amount <= self.value:
            return None
        return (
            f"the document makes {amount:,} {self.unit}, more than the {self.value:,} a file "
            f"may make ({self.setting}): split it into smaller files, or ask an operator to "
            "raise the limit and retry"
        )


MARKDOWN_LIMIT = FileLimit("PROVENANCE_MAX_MARKDOWN_BYTES", "bytes of Markdown")
CHUNKS_LIMIT = FileLimit("PROVENANCE_MAX_CHUNKS_PER_FILE", "chunks")


class LimitExceeded(Exception):
    """A file makes more than a :class:`FileLimit` allows."""

    def __init__(self, limit: FileLimit, reason: str) -> None:
        super().__init__(reason)
        self.limit, self.reason = limit, reason


def _limit_check(limit: FileLimit, amount: int) -> None:
    reason = limit.refusal(amount)
    if reason is not None:
        raise LimitExceeded(limit, reason)


# --- stage 1: convert -------------------------------------------------------------


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
    with original_open(record.storage_key) as handle:
        data = handle.read()
    # a PDF's page words are read in a second sandbox child on the other core while
    # it converts, so the chunk stage does not wait for them
    with ThreadPoolExecutor(max_workers=1) as reader:
        words = reader.submit(_page_words_read, data, file_id) if record.kind == "pdf" else None
        try:
            conversion = _convert(data, record.kind, progress=_conversion_progress(lease))
            _limit_check(MARKDOWN_LIMIT, len(conversion.markdown.encode()))
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


def retry_can_help(file: File) -> bool:
    """A failed file is worth retrying unless the current converter refused its bytes
    for good (a newer converter version may read them) or they exceed a per-file
    limit as it stands (a raised one may let them through); a deleted one is not."""
    hopeless = {converter_label(file.kind), MARKDOWN_LIMIT.label, CHUNKS_LIMIT.label}
    return (
        file.status == FileStatus.FAILED
        and file.deleted_at is None
        and file.refused_by not in hopeless
    )


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
            _ready_on(lease.rows(), published)
        else:  # its chunks and vectors are all still stored: publish it again
            _publish(lease, published)
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
            "metadata": conversion.metadata,
        },
    )
    spans = [
        [s.char_start, s.char_end, s.page_number, s.x0, s.y0, s.x1, s.y1] for s in conversion.spans
    ]
    SourceBoxes.objects.update_or_create(
        markdown=markdown, defaults={"spans": spans, "page_words": page_words}
    )
    pages = conversion.page_count or 0
    _advance(lease.rows(), to=FileStatus.CHUNKING, progress_done=pages, progress_total=pages)
    return True


def _draft_markdown(file_id: str, *, text: bool = True) -> DocumentMarkdown | None:
    """The conversion being ingested; without its ``text`` (the embed stage, which
    reads it once per slice, needs only its id)."""
    drafts = DocumentMarkdown.objects.filter(file_id=file_id, published_at__isnull=True)
    if not text:
        drafts = drafts.only("id", "file_id", "created_at")
    return drafts.order_by("-created_at").first()


# --- stage 2: chunk ---------------------------------------------------------------


def file_chunk(*, file_id: str) -> bool:
    """Cut the Markdown into chunks with their Locations, replacing any earlier try."""
    lease = lease_claim(file_id, statuses=(FileStatus.CHUNKING,), working=FileStatus.CHUNKING)
    if lease is None:
        return False
    with heartbeat(lease):
        markdown = _draft_markdown(file_id)
        if markdown is None:
            reason = "converted Markdown is missing; retry the file"
            file_fail(file_id=file_id, reason=reason, lease=lease)
            return False
        # the rows are computed before the transaction opens: it only deletes an earlier
        # try and writes
        try:
            chunks, locations = _chunk_rows(markdown)
        except LimitExceeded as exc:
            file_fail(file_id=file_id, reason=exc.reason, refused_by=exc.limit.label, lease=lease)
            return False
        return _chunks_replace(lease, markdown, chunks, locations)


def _chunk_rows(markdown: DocumentMarkdown) -> tuple[list[Chunk], list[Location]]:
    """The chunks of the draft Markdown and their Locations, not yet saved.

    A PDF's words come from the convert stage, which read them beside the
    conversion; only when it could not are they read again here.
    """
    record = markdown.file
    structure = MarkdownStructure(markdown.markdown, body_start=markdown.body_start)
    boxes = getattr(markdown, "boxes", None)
    spans = [SourceSpan(*row) for row in (boxes.spans if boxes else [])]
    kept = boxes.page_words if boxes else None
    page_words = _words_unpacked(kept, record.pk) if kept is not None else None
    if page_words is None:
        page_words = _page_words(record)
    chunk_spans = chunk_markdown(
        structure,
        target=settings.PROVENANCE_CHUNK_TARGET_TOKENS,
        overlap=settings.PROVENANCE_CHUNK_OVERLAP_TOKENS,
    )
    _limit_check(CHUNKS_LIMIT, len(chunk_spans))  # before the costly locating
    locator = Locator(structure, line_pages=markdown.line_pages, spans=spans, page_words=page_words)
    database_id = record.data_source.vector_database_id
    contexts = ChunkContexts(structure, document=record.name, line_pages=markdown.line_pages)
    chunks, locations = [], []
    for position, span in enumerate(chunk_spans):
        text = markdown.markdown[span.char_start : span.char_end]
        drafts = locator.locate(span.char_start, span.char_end)
        pages = [d.page_number for d in drafts if d.page_number is not None]
        chunk = Chunk(
            file=record,
            markdown=markdown,
            vector_database_id=database_id,
            position=position,
            organization_id=record.organization_id,
            data_source_id=record.data_source_id,
            chunk_text=text,
            token_count=span.token_count,
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            hierarchy=drafts[0].hierarchy,
            section=" > ".join(drafts[0].hierarchy),
            context=contexts.context(span.char_start, span.char_end, hierarchy=drafts[0].hierarchy),
            char_start=span.char_start,
            char_end=span.char_end,
            line_number_start=drafts[0].line_number_start,
            line_number_end=drafts[-1].line_number_end,
            page_start=min(pages) if pages else None,
            page_end=max(pages) if pages else None,
        )
        chunks.append(chunk)
        locations += [Location(chunk=chunk, ordinal=i, **vars(d)) for i, d in enumerate(drafts)]
    return chunks, locations


@transaction.atomic
def _chunks_replace(
    lease: Lease, markdown: DocumentMarkdown, chunks: list[Chunk], locations: list[Location]
) -> bool:
    """Store the chunks and move on to embedding; False (nothing stored) if the file
    was cancelled, deleted or taken over meanwhile."""
    if not lease.hold_locked():
        return False
    earlier = Chunk.objects.filter(markdown=markdown)
    if earlier.exists():  # an earlier try of this stage: a worker died, a retry
        # by chunk id, not a join: a self-join planned on stale statistics (a bulk
        # load just now) can scan the whole table once per location
        Location.objects.filter(chunk_id__in=earlier.values("pk")).delete()
        earlier.delete()
    Chunk.objects.bulk_create(chunks, batch_size=500)
    Location.objects.bulk_create(locations, batch_size=1000)
    # the words have served: the boxes are stored; a later try reads them again
    SourceBoxes.objects.filter(markdown=markdown, page_words__isnull=False).update(page_words=None)
    _advance(lease.rows(), to=FileStatus.EMBEDDING, progress_done=0, progress_total=len(chunks))
    return True


def _page_words(record: File) -> DocumentWords | None:
    """A PDF's page words read again from the original (the convert stage could not),
    so a chunk that starts or ends inside a line is boxed to its own words; ``None``
    (whole-line boxes, logged) when the original cannot be read."""
    if record.kind != "pdf":
        return None
    try:
        with original_open(record.storage_key) as handle:
            data = handle.read()
    except Exception as error:  # storage: never fails the file
        logger.warning("boxes of %s stay whole lines: %s", record.pk, error)
        return None
    packed = _page_words_read(data, str(record.pk))
    return None if packed is None else _words_unpacked(packed, record.pk)


def _page_words_read(data: bytes, file_id: str) -> bytes | None:
    """``pdf_words_isolated`` under the conversion limits (packed words); ``None``
    (logged) if the child fails: the boxes then stay whole lines, the file carries on."""
    try:
        return pdf_words_isolated(
            data,
            timeout_s=settings.PROVENANCE_CONVERT_TIMEOUT_SECONDS,
            memory_mb=settings.PROVENANCE_CONVERT_MEMORY_MB,
        )
    except Exception as error:  # sandbox: never fails the file
        logger.warning("boxes of %s stay whole lines: %s", file_id, error)
        return None


def _words_unpacked(packed: bytes, file_id: object) -> DocumentWords | None:
    """Packed words ready for narrowing, or ``None`` (logged) if they cannot be
    unpacked (damaged, or too large for memory)."""
    try:
        return DocumentWords(words_unpack(packed))
    except Exception as error:  # never fails the file
        logger.warning("words of %s unreadable: %s", file_id, error)
        return None


# --- stage 3: embed ---------------------------------------------------------------


def file_embed(
    *, file_id: str, turn: str | None = None, slice_seconds: float | None = None
) -> bool:
    """Embed the chunks still without a vector, then publish.

    A worker runs this in slices of ``slice_seconds``: when a slice is over and
    chunks are left, the file goes to the back of its queue (:func:`_turn_pass`),
    so the stages of every other file waiting there, a one-page upload of another
    organization among them, run before its next slice. ``turn`` is the token a
    slice left for the next one; ``None`` starts the stage (or takes over a file
    whose worker died). Without ``slice_seconds`` the call embeds the whole file.

    The stage's owner (it holds the lease) asks idle worker processes to share
    its slice (:func:`file_embed_share`): everyone takes batches with ``FOR UPDATE
    SKIP LOCKED``, so no chunk is embedded twice, and a helper that dies rolls its
    batch back for the owner to redo. The owner publishes only once no chunk is
    left without a vector. Every batch starts with a check that the file is still
    this slice's, so a cancellation or deletion stops it within a batch.
    """
    lease = lease_claim(
        file_id, statuses=(FileStatus.EMBEDDING,), working=FileStatus.EMBEDDING, turn=turn
    )
    if lease is None:
        return False
    with heartbeat(lease):
        markdown = _draft_markdown(file_id, text=False)
        if markdown is None:
            file_fail(file_id=file_id, reason="chunks are missing; retry the file", lease=lease)
            return False
        if turn is None:
            _vectors_reuse(file_id, markdown)
        return _embed_slice(lease, markdown, slice_seconds)


def _embed_slice(lease: Lease, markdown: DocumentMarkdown, slice_seconds: float | None) -> bool:
    """Batches until the slice is over (then the next turn is queued), the file is
    published, or the file is no longer this slice's (False)."""
    file_id = lease.file_id
    sharing = 1 + _helpers_request(file_id, markdown, slice_seconds)
    deadline = None if slice_seconds is None else time.monotonic() + slice_seconds
    while lease.held():
        if _batch_embed(file_id, markdown, wait=False, sharing=sharing):
            over = deadline is not None and time.monotonic() >= deadline
            if over and Chunk.objects.filter(markdown=markdown, embedding__isnull=True).exists():
                return _turn_pass(lease)  # else publish now, not a turn later
            continue
        # batches other processes hold: wait for them to commit (or roll back)
        if not _batch_embed(file_id, markdown, wait=True, sharing=sharing):
            return _publish(lease, markdown)
    logger.info("embedding of %s stopped: cancelled, deleted or taken over", file_id)
    return False


def _turn_pass(lease: Lease) -> bool:
    """Queue the file's next slice at the back of its queue, with the token only that
    message can claim the file with."""
    from documents.tasks import embed_file

    turn = lease_pass(lease)
    if turn is None:
        return False
    queue = _queue_for(lease.file_id)
    options = {"queue": queue} if queue else {}
    embed_file.apply_async((lease.file_id, turn), **options)
    return True


def _vectors_reuse(file_id: str, markdown: DocumentMarkdown) -> int:
    """Give each chunk whose exact text an earlier conversion or revision of the same
    document has embedded in the same vector database (so by the same model) that
    vector, instead of running the model again; returns how many were given.

    A converter upgrade converts a library again and a new revision mostly repeats
    the old one: only the chunks whose text changed go through the model.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE documents_chunk AS new SET embedding = source.embedding
            FROM (
                -- one earlier chunk per text and context (the vector was made of both),
                -- picked by id (the vectors are not sorted)
                SELECT DISTINCT ON (
                    earlier.vector_database_id, earlier.content_hash, earlier.context
                )
                    earlier.vector_database_id, earlier.content_hash, earlier.context, earlier.id
                FROM documents_chunk AS earlier
                JOIN documents_file AS revision ON revision.id = earlier.file_id
                WHERE revision.document_id = %(document)s
                    AND earlier.markdown_id <> %(markdown)s
                    AND earlier.embedding IS NOT NULL
                ORDER BY
                    earlier.vector_database_id, earlier.content_hash, earlier.context, earlier.id
            ) AS earliest
            JOIN documents_chunk AS source ON source.id = earliest.id
            WHERE new.markdown_id = %(markdown)s
                AND new.embedding IS NULL
                AND new.vector_database_id = earliest.vector_database_id
                AND new.content_hash = earliest.content_hash
                AND new.context = earliest.context
            """,
            {
                "document": File.objects.values_list("document_id", flat=True).get(pk=file_id),
                "markdown": markdown.pk,
            },
        )
        reused = cursor.rowcount
    if reused:
        logger.info("reused %d vectors of earlier conversions for %s", reused, file_id)
        _embed_progress_save(file_id, markdown)
    return reused


def file_embed_share(
    *, file_id: str, markdown_id: str, sharing: int = 2, slice_seconds: float | None = None
) -> int:
    """Help the owner of a file's embed stage; returns how many batches this embedded.

    Holds no lease (it never renews one) and never publishes: it only fills vectors
    of the draft the owner is embedding, for one slice at most, and stops as soon
    as nothing is left to take or the file is no longer being embedded (cancelled,
    deleted). ``sharing`` is how many processes the owner asked to embed the file,
    itself included.
    """
    markdown = (
        DocumentMarkdown.objects.filter(pk=markdown_id, file_id=file_id, published_at__isnull=True)
        .only("id", "file_id")
        .first()
    )
    embedding = File.objects.filter(
        pk=file_id, status=FileStatus.EMBEDDING, deleted_at__isnull=True
    )
    deadline = None if slice_seconds is None else time.monotonic() + slice_seconds
    batches = 0
    while markdown is not None and embedding.exists():
        if not _batch_embed(file_id, markdown, wait=False, sharing=sharing):
            break
        batches += 1
        if deadline is not None and time.monotonic() >= deadline:
            break
    return batches


def _helpers_request(file_id: str, markdown: DocumentMarkdown, slice_seconds: float | None) -> int:
    """Queue helpers for this slice when no other file is being ingested (they would
    only give this one a larger share of a busy pool) and the file has at least two
    full batches per helper's worth to embed; returns how many were asked for (a
    busy pool may start fewer)."""
    helpers = settings.PROVENANCE_EMBED_HELPERS
    if helpers == 0 or _others_in_progress(file_id):
        return 0
    missing = Chunk.objects.filter(markdown=markdown, embedding__isnull=True).count()
    wanted = max(0, min(helpers, missing // settings.PROVENANCE_EMBED_BATCH_SIZE - 1))
    if wanted > 0:
        from documents.tasks import embed_file_share

        share = embed_file_share.s(file_id, str(markdown.pk), wanted + 1, slice_seconds)
        queue = _queue_for(file_id)
        options = {"queue": queue} if queue else {}
        for _ in range(wanted):
            share.apply_async(**options)
    return wanted


def _others_in_progress(file_id: str) -> bool:
    return (
        File.objects.filter(status__in=IN_PROGRESS_STATUSES, deleted_at__isnull=True)
        .exclude(pk=file_id)
        .exists()
    )


def _queue_for(file_id: str) -> str | None:
    """The background queue for a file being converted again (it has a published
    conversion), so its work never runs ahead of new uploads; else the default."""
    again = DocumentMarkdown.objects.filter(file_id=file_id, is_active=True).exists()
    return settings.PROVENANCE_BACKGROUND_QUEUE if again else None


def _batch_embed(file_id: str, markdown: DocumentMarkdown, *, wait: bool, sharing: int = 1) -> bool:
    """Embed one batch of chunks without a vector; False when there was none to take.

    The batch's rows stay locked while the model runs, so other processes skip
    them (``wait=False``) or wait for this one to finish (``wait=True``). Batches
    are taken shortest chunks first: the model's runs then hold texts of nearly one
    length, so little of a run is padding (fewer tokens through the model than
    batches taken in reading order, where a section's short last chunk sits beside
    full ones).
    """
    from retrieval.embedders import default_embedder

    size = _batch_size(file_id, sharing=sharing)
    with transaction.atomic():
        batch = list(
            Chunk.objects.select_for_update(skip_locked=not wait)
            .filter(markdown=markdown, embedding__isnull=True)
            .order_by("token_count", "position")
            .only("id", "chunk_text", "context")[:size]
        )
        if not batch:
            return False
        started = time.perf_counter()
        texts = [embedding_text(c.chunk_text, c.context) for c in batch]
        vectors = default_embedder().embed_documents(texts)
        embedded = time.perf_counter()
        for chunk, vector in zip(batch, vectors, strict=True):
            chunk.embedding = vector
        Chunk.objects.bulk_update(batch, ["embedding"])
    logger.info(
        "embedded %d chunks of %s: model %.3f s, write and commit %.3f s",
        len(batch),
        file_id,
        embedded - started,
        time.perf_counter() - embedded,
    )
    _embed_progress_save(file_id, markdown)
    return True


def _embed_progress_save(file_id: str, markdown: DocumentMarkdown) -> None:
    """Chunks with a vector so far, as the file's progress: the total less those left
    (counted off the partial index of chunks to embed), never lower than a count
    saved before, so processes sharing the file never move it backwards. The lease
    is left alone: only the owner's heartbeat renews it."""
    left = Chunk.objects.filter(markdown=markdown, embedding__isnull=True).count()
    File.objects.filter(pk=file_id, status=FileStatus.EMBEDDING).update(
        progress_done=Greatest(F("progress_done"), F("progress_total") - left),
        updated_at=timezone.now(),
    )


def _batch_size(file_id: str, *, sharing: int) -> int:
    """Full batches while there is plenty to embed, smaller ones near the end.

    Processes sharing a file then finish within one forward pass of each other,
    instead of one waiting through the other's last full batch before the file
    is published (up to a whole batch's time). Only for
    the local model: for an embeddings service a batch is a request.
    """
    from retrieval.embedders import MiniLmEmbedder, default_embedder

    batch = settings.PROVENANCE_EMBED_BATCH_SIZE
    if sharing <= 1 or batch <= TAIL_BATCH or not isinstance(default_embedder(), MiniLmEmbedder):
        return batch
    total, done = File.objects.values_list("progress_total", "progress_done").get(pk=file_id)
    return max(TAIL_BATCH, min(batch, (total - done) // (2 * sharing)))


@transaction.atomic
def _publish(lease: Lease, markdown: DocumentMarkdown) -> bool:
    """Make the new Markdown the active one and supersede older revisions; False
    (nothing published) if the file was cancelled, deleted or taken over."""
    from retrieval.services import chunks_retrievable_set

    file_id = lease.file_id
    now = timezone.now()
    document = File.objects.values("data_source_id", "name", "revision").get(pk=file_id)
    # this revision and every older one, locked newest first as file_delete locks them:
    # two revisions published at once then wait for each other instead of each
    # holding an older row the other one needs (a deadlock)
    locked = list(
        File.objects.select_for_update()
        .filter(
            data_source_id=document["data_source_id"],
            name=document["name"],
            revision__lte=document["revision"],
        )
        .order_by("-revision")
    )
    record, older = locked[0], [revision.pk for revision in locked[1:]]  # revisions are unique
    if record.lease_owner != lease.token:
        return False
    DocumentMarkdown.objects.filter(file=record, is_active=True).update(is_active=False)
    DocumentMarkdown.objects.filter(pk=markdown.pk).update(is_active=True, published_at=now)
    File.objects.filter(pk__in=older, superseded_at__isnull=True).update(superseded_at=now)
    chunks_retrievable_set(
        Chunk.objects.filter(file__in=[record.pk, *older]).exclude(markdown=markdown),
        retrievable=False,
    )
    if record.deleted_at is None and record.superseded_at is None:
        # a revision converted again after a newer one was published stays hidden
        chunks_retrievable_set(Chunk.objects.filter(markdown=markdown), retrievable=True)
    # ready_at says when this revision first became ready, not when it was converted again
    _ready_on(lease.rows(), markdown, ready_at=record.ready_at or now)
    return True


# --- recovery and retries -------------------------------------------------------


def ingestion_resume_stalled() -> list[str]:
    """Re-queue files whose worker died (lease expired: its heartbeat stopped) or
    whose message may have been lost (no lease, and no news for
    ``PROVENANCE_INGEST_REQUEUE_SECONDS``: long, as a file waiting behind a
    backlog looks the same)."""
    now = timezone.now()
    quiet = now - timedelta(seconds=settings.PROVENANCE_INGEST_REQUEUE_SECONDS)
    stalled = File.objects.filter(status__in=IN_PROGRESS_STATUSES, deleted_at__isnull=True).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=quiet)
    )
    from documents.tasks import pipeline_for

    file_ids = []
    for pk in stalled.values_list("pk", flat=True):
        file_id = str(pk)
        # still stalled (not claimed meanwhile): its expired lease goes, so the file is
        # sent once per lease length, not at every sweep until a worker claims it
        if not stalled.filter(pk=pk).update(updated_at=now, lease_expires_at=None):
            continue
        logger.info("resuming stalled ingestion of %s", file_id)
        pipeline_for(file_id, queue=_queue_for(file_id)).apply_async()
        file_ids.append(file_id)
    return file_ids


@transaction.atomic
def file_reconvert(
    *,
    file: File,
    reason: str,
    user: AbstractBaseUser | None = None,
    origin: str | None = None,
) -> bool:
    """Run a ready file through the pipeline again, for a new converter version;
    the request is recorded in the document's ledger with ``reason``.

    Its published Markdown and chunks stay active (and retrievable) until the new
    ones are published; then they stay stored for the answers that cited them.
    The stages run on the background queue, so new uploads are not held behind a
    library's worth of re-conversions. False when the file is not ready (in
    progress, failed), deleted or superseded.
    """
    from audit.events import document_event_record

    queued = _requeue(
        file,
        queue=settings.PROVENANCE_BACKGROUND_QUEUE,
        status=FileStatus.READY,
        deleted_at__isnull=True,
        superseded_at__isnull=True,
    )
    if queued:
        document_event_record(
            kind="reconversion", file=file, user=user, origin=origin, reason=reason
        )
    return queued


@transaction.atomic
def file_retry(*, file: File) -> None:
    """Run a failed (or cancelled) file's ingestion again from the start."""
    _requeue(file, status=FileStatus.FAILED, deleted_at__isnull=True)


def _requeue(file: File, *, queue: str | None = None, **still: object) -> bool:
    """Back to ``pending`` and queued on ``queue``, if the file still matches ``still``."""
    updated = File.objects.filter(pk=file.pk, **still).update(
        status=FileStatus.PENDING,
        error_message="",
        refused_by="",
        lease_owner="",
        lease_expires_at=None,
        progress_done=0,
        progress_total=0,
        updated_at=timezone.now(),
    )
    if updated:
        ingestion_queue(file_id=file.pk, queue=queue)
    return bool(updated)


class NotCancellable(Exception):
    """The file is not being ingested (ready, failed, deleted): there is nothing to stop."""


@transaction.atomic
def file_cancel(
    *,
    file: File,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    reason: str = "",
) -> None:
    """Stop the ingestion of a file that is not ready yet; recorded in the document's
    ledger with ``reason`` (or the file's new error message when none is given).

    The file ends ``failed`` "cancelled by <who>" (a file being converted again:
    ``ready`` on its previous conversion, saying so) and can be retried. Its
    queued stages exit at their claim, a running one at its next check: between
    embedding batches, at a conversion's progress report (the sandbox is
    stopped), or before a stage stores its output. Raises :class:`NotCancellable`
    when the file is not in progress.
    """
    from audit.events import actor_label, document_event_record

    status = File.objects.select_for_update().values_list("status", flat=True).get(pk=file.pk)
    if status not in IN_PROGRESS_STATUSES:
        raise NotCancellable(f"{file.name} is {status}: there is no ingestion to cancel")
    message = f"cancelled by {actor_label(user, api_key)}"
    _ingestion_stop(str(file.pk), reason=message)
    document_event_record(
        kind="cancellation",
        file=file,
        user=user,
        api_key=api_key,
        origin=origin,
        reason=reason or message,
    )


def _ingestion_stop(file_id: str, *, reason: str) -> None:
    """End a file's ingestion now, whatever stage holds it (the caller holds its row
    lock): the lease token goes, so the stage's next check or write finds it gone."""
    file_fail(file_id=file_id, reason=reason)


class AlreadyDeleted(Exception):
    """Every revision of the document is deleted already."""


@transaction.atomic
def file_delete(
    *,
    file: File,
    reason: str,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
) -> None:
    """Hide every revision of a document from retrieval; bytes, chunks and the
    answers that cited them stay for evidence, and the deletion is recorded. A
    revision still being ingested is cancelled (:func:`file_cancel`'s way).

    Raises :class:`AlreadyDeleted` when no revision is left to delete, so a
    repeated request records no second deletion.
    """
    from audit.events import actor_label, document_event_record
    from retrieval.services import chunks_retrievable_set

    if not reason.strip():
        raise ValueError("a deletion needs a reason")
    revisions = File.objects.filter(data_source_id=file.data_source_id, name=file.name)
    # the lock makes two requests at once delete (and record) once; newest first, the
    # order _publish locks in, so a deletion during a publish waits instead of deadlocking
    live = list(
        revisions.select_for_update()
        .filter(deleted_at__isnull=True)
        .order_by("-revision")
        .values_list("pk", flat=True)
    )
    if not live:
        raise AlreadyDeleted(f"{file.name} is already deleted")
    document_event_record(
        kind="deletion", file=file, user=user, api_key=api_key, origin=origin, reason=reason
    )
    stopped = f"cancelled: the document was deleted by {actor_label(user, api_key)}"
    for pk in File.objects.filter(pk__in=live, status__in=IN_PROGRESS_STATUSES).values_list(
        "pk", flat=True
    ):
        _ingestion_stop(str(pk), reason=stopped)
    now = timezone.now()
    File.objects.filter(pk__in=live).update(deleted_at=now, deletion_reason=reason)
    chunks_retrievable_set(Chunk.objects.filter(file__in=revisions), retrievable=False)
