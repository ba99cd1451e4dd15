"""The ingestion pipeline's stages: convert → chunk → embed → ready.

Each stage claims its file with a conditional UPDATE (status + an expired or
absent lease), so a stage runs at most once at a time per file however many
workers or duplicate messages there are; each replaces its own output
atomically, so re-running it never duplicates anything. A worker that dies
leaves a lease that expires; :func:`ingestion_resume_stalled` re-queues it.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from documents.chunking import chunk_markdown
from documents.converters import Conversion, ConversionError
from documents.converters.base import ProgressReport, SourceSpan
from documents.converters.sandbox import pdf_words_isolated
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


def _lease() -> timezone.datetime:
    return timezone.now() + timedelta(seconds=settings.PROVENANCE_INGEST_LEASE_SECONDS)


def _claim(file_id: str, *, statuses: tuple[str, ...], working: str) -> bool:
    """Take the file for one stage; False if another worker holds it or it moved on."""
    now = timezone.now()
    claimed = (
        File.objects.filter(pk=file_id, status__in=statuses)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .update(status=working, lease_expires_at=_lease(), updated_at=now)
    )
    return claimed == 1


def _advance(file_id: str, *, to: str, **fields: object) -> None:
    File.objects.filter(pk=file_id).update(
        status=to, lease_expires_at=None, updated_at=timezone.now(), **fields
    )


def file_fail(*, file_id: str, reason: str, refused_by: str = "") -> None:
    """End ingestion with a reason a person can act on; the bytes stay stored.
    ``refused_by`` names the converter that refuses these bytes for good.

    A file converted again (:func:`file_reconvert`) still has its published
    Markdown and chunks: it goes back to ``ready`` on them, with the reason."""
    logger.warning("ingestion of %s failed: %s", file_id, reason)
    active = DocumentMarkdown.objects.filter(file_id=file_id, is_active=True).first()
    if active is not None:
        message = f"converting again failed; the previous conversion stays in use: {reason}"
        _ready_on(file_id, active, error_message=message[:2000])
        return
    _advance(file_id, to=FileStatus.FAILED, error_message=reason[:2000], refused_by=refused_by)


def _ready_on(file_id: str, markdown: DocumentMarkdown, **fields: object) -> None:
    """``ready`` on a published conversion, its chunk count as progress."""
    chunks = Chunk.objects.filter(markdown=markdown).count()
    _advance(file_id, to=FileStatus.READY, progress_done=chunks, progress_total=chunks, **fields)


# --- stage 1: convert -------------------------------------------------------------


def file_convert(*, file_id: str) -> bool:
    """Convert the original bytes to Markdown with a location map (in a sandbox)."""
    if not _claim(
        file_id, statuses=(FileStatus.PENDING, FileStatus.CONVERTING), working=FileStatus.CONVERTING
    ):
        return False
    record = File.objects.get(pk=file_id)
    File.objects.filter(pk=file_id).update(
        attempts=record.attempts + 1, error_message="", progress_done=0, progress_total=0
    )
    with original_open(record.storage_key) as handle:
        data = handle.read()
    # a PDF's page words are read in a second sandbox child on the other core while
    # it converts, so the chunk stage does not wait for them (~0.9 s per 100 pages)
    with ThreadPoolExecutor(max_workers=1) as reader:
        words = reader.submit(_page_words_read, data, file_id) if record.kind == "pdf" else None
        try:
            conversion = _convert(data, record.kind, progress=_conversion_progress(file_id))
        except ConversionError as exc:
            refused_by = converter_label(record.kind) if exc.permanent else ""
            file_fail(file_id=file_id, reason=exc.reason, refused_by=refused_by)
            return False
        page_words = words.result() if words else None
    _markdown_store(record, conversion, page_words)
    return True


def converter_label(kind: str) -> str:
    """``name version`` of the converter that reads ``kind`` now."""
    from documents.converters import converter_for

    converter = converter_for(kind)
    return f"{converter.name} {converter.version}"


def retry_can_help(file: File) -> bool:
    """A failed file is worth retrying unless the current converter refused its bytes
    for good (a newer converter version may read them)."""
    return file.status == FileStatus.FAILED and file.refused_by != converter_label(file.kind)


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


def _conversion_progress(file_id: str) -> ProgressReport:
    """Pages converted so far, saved on the file as the sandbox reports them (every
    half second at most) with a renewed lease: a long conversion is neither a
    silent one nor taken for a dead worker's."""

    def save(done: int, total: int) -> None:
        File.objects.filter(pk=file_id, status=FileStatus.CONVERTING).update(
            progress_done=done, progress_total=total, lease_expires_at=_lease()
        )

    return save


@transaction.atomic
def _markdown_store(record: File, conversion: Conversion, page_words: bytes | None = None) -> None:
    if not conversion.markdown[conversion.body_start :].strip():
        file_fail(
            file_id=str(record.pk),
            reason="the document contains no text",
            refused_by=converter_label(record.kind),
        )
        return
    published = DocumentMarkdown.objects.filter(
        file=record,
        converter=conversion.converter,
        converter_version=conversion.converter_version,
        published_at__isnull=False,
    ).first()
    if published is not None:  # converted again by a version it had (a rollback, an old worker)
        if published.is_active:
            _ready_on(str(record.pk), published)
        else:  # its chunks and vectors are all still stored: publish it again
            _publish(str(record.pk), published)
        return
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
    _advance(str(record.pk), to=FileStatus.CHUNKING, progress_done=pages, progress_total=pages)


def _draft_markdown(file_id: str) -> DocumentMarkdown | None:
    return (
        DocumentMarkdown.objects.filter(file_id=file_id, published_at__isnull=True)
        .order_by("-created_at")
        .first()
    )


# --- stage 2: chunk ---------------------------------------------------------------


def file_chunk(*, file_id: str) -> bool:
    """Cut the Markdown into chunks with their Locations, replacing any earlier try."""
    if not _claim(file_id, statuses=(FileStatus.CHUNKING,), working=FileStatus.CHUNKING):
        return False
    markdown = _draft_markdown(file_id)
    if markdown is None:
        file_fail(file_id=file_id, reason="converted Markdown is missing; retry the file")
        return False
    # the rows are computed before the transaction opens: it only deletes an earlier
    # try and writes
    chunks, locations = _chunk_rows(markdown)
    _chunks_replace(markdown, chunks, locations)
    return True


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
    locator = Locator(structure, line_pages=markdown.line_pages, spans=spans, page_words=page_words)
    database_id = record.data_source.vector_database_id
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
    markdown: DocumentMarkdown, chunks: list[Chunk], locations: list[Location]
) -> None:
    Location.objects.filter(chunk__markdown=markdown).delete()
    Chunk.objects.filter(markdown=markdown).delete()
    Chunk.objects.bulk_create(chunks, batch_size=500)
    Location.objects.bulk_create(locations, batch_size=1000)
    # the words have served: the boxes are stored; a later try reads them again
    SourceBoxes.objects.filter(markdown=markdown, page_words__isnull=False).update(page_words=None)
    _advance(
        str(markdown.file_id), to=FileStatus.EMBEDDING, progress_done=0, progress_total=len(chunks)
    )


def _page_words(record: File) -> DocumentWords | None:
    """A PDF's page words read again from the original (the convert stage could not),
    so a chunk that starts or ends inside a line is boxed to its own words; ``None``
    (whole-line boxes, logged) when the original cannot be read."""
    if record.kind != "pdf":
        return None
    try:
        with original_open(record.storage_key) as handle:
            data = handle.read()
    except Exception as error:  # noqa: BLE001 - storage: never fails the file
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
    except Exception as error:  # noqa: BLE001 - sandbox: never fails the file
        logger.warning("boxes of %s stay whole lines: %s", file_id, error)
        return None


def _words_unpacked(packed: bytes, file_id: object) -> DocumentWords | None:
    """Packed words ready for narrowing, or ``None`` (logged) if they cannot be
    unpacked (damaged, or too large for memory)."""
    try:
        return DocumentWords(words_unpack(packed))
    except Exception as error:  # noqa: BLE001 - never fails the file
        logger.warning("words of %s unreadable: %s", file_id, error)
        return None


# --- stage 3: embed ---------------------------------------------------------------


def file_embed(*, file_id: str) -> bool:
    """Embed the chunks still without a vector, then publish.

    The stage's owner (it holds the lease) asks idle worker processes to share
    the work (:func:`file_embed_share`): everyone takes batches with ``FOR UPDATE
    SKIP LOCKED``, so no chunk is embedded twice at once, and a helper that dies
    rolls its batch back for the owner to redo. The owner publishes only once no
    chunk is left without a vector.
    """
    if not _claim(file_id, statuses=(FileStatus.EMBEDDING,), working=FileStatus.EMBEDDING):
        return False
    markdown = _draft_markdown(file_id)
    if markdown is None:
        file_fail(file_id=file_id, reason="chunks are missing; retry the file")
        return False
    _vectors_reuse(file_id, markdown)
    sharing = 1 + _helpers_request(file_id, markdown)
    while True:
        while _batch_embed(file_id, markdown, wait=False, sharing=sharing):
            pass
        # batches other processes hold: wait for them to commit (or roll back)
        if not _batch_embed(file_id, markdown, wait=True, sharing=sharing):
            break
    _publish(file_id, markdown)
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
                -- one earlier chunk per text, picked by id (the vectors are not sorted)
                SELECT DISTINCT ON (earlier.vector_database_id, earlier.content_hash)
                    earlier.vector_database_id, earlier.content_hash, earlier.id
                FROM documents_chunk AS earlier
                JOIN documents_file AS revision ON revision.id = earlier.file_id
                WHERE revision.document_id = %(document)s
                    AND earlier.markdown_id <> %(markdown)s
                    AND earlier.embedding IS NOT NULL
                ORDER BY earlier.vector_database_id, earlier.content_hash, earlier.id
            ) AS earliest
            JOIN documents_chunk AS source ON source.id = earliest.id
            WHERE new.markdown_id = %(markdown)s
                AND new.embedding IS NULL
                AND new.vector_database_id = earliest.vector_database_id
                AND new.content_hash = earliest.content_hash
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


def file_embed_share(*, file_id: str, markdown_id: str, sharing: int = 2) -> int:
    """Help the owner of a file's embed stage; returns how many batches this embedded.

    Holds no lease and never publishes: it only fills vectors of the draft the
    owner is embedding, and stops as soon as nothing is left to take. ``sharing``
    is how many processes the owner asked to embed the file, itself included.
    """
    markdown = DocumentMarkdown.objects.filter(
        pk=markdown_id, file_id=file_id, published_at__isnull=True
    ).first()
    if (
        markdown is None
        or not File.objects.filter(pk=file_id, status=FileStatus.EMBEDDING).exists()
    ):
        return 0
    batches = 0
    while _batch_embed(file_id, markdown, wait=False, sharing=sharing):
        batches += 1
    return batches


def _helpers_request(file_id: str, markdown: DocumentMarkdown) -> int:
    """Queue helpers when the file has at least two full batches per helper's worth
    to embed; returns how many were asked for (a busy pool may start fewer)."""
    helpers = settings.PROVENANCE_EMBED_HELPERS
    missing = Chunk.objects.filter(markdown=markdown, embedding__isnull=True).count()
    wanted = max(0, min(helpers, missing // settings.PROVENANCE_EMBED_BATCH_SIZE - 1))
    if wanted > 0:
        from documents.tasks import embed_file_share

        share = embed_file_share.s(file_id, str(markdown.pk), wanted + 1)
        queue = _queue_for(file_id)
        options = {"queue": queue} if queue else {}
        for _ in range(wanted):
            share.apply_async(**options)
    return wanted


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
    length, so little of a run is padding (2-13 % fewer tokens through the model
    than batches taken in reading order, where a section's short last chunk sits
    beside full ones).
    """
    from retrieval.embedders import default_embedder

    size = _batch_size(file_id, sharing=sharing)
    with transaction.atomic():
        batch = list(
            Chunk.objects.select_for_update(skip_locked=not wait)
            .filter(markdown=markdown, embedding__isnull=True)
            .order_by("token_count", "position")
            .only("id", "chunk_text")[:size]
        )
        if not batch:
            return False
        started = time.perf_counter()
        vectors = default_embedder().embed_documents([c.chunk_text for c in batch])
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
    """Chunks with a vector so far, as the file's progress, with a renewed lease."""
    done = Chunk.objects.filter(markdown=markdown, embedding__isnull=False).count()
    File.objects.filter(pk=file_id, status=FileStatus.EMBEDDING).update(
        progress_done=done, lease_expires_at=_lease(), updated_at=timezone.now()
    )


def _batch_size(file_id: str, *, sharing: int) -> int:
    """Full batches while there is plenty to embed, smaller ones near the end.

    Processes sharing a file then finish within one forward pass of each other,
    instead of one waiting through the other's last full batch before the file
    is published (up to a whole batch's time, ~0.5-1 s for 64 chunks). Only for
    the local model: for an embeddings service a batch is a request.
    """
    from retrieval.embedders import MiniLmEmbedder, default_embedder

    batch = settings.PROVENANCE_EMBED_BATCH_SIZE
    if sharing <= 1 or batch <= TAIL_BATCH or not isinstance(default_embedder(), MiniLmEmbedder):
        return batch
    total, done = File.objects.values_list("progress_total", "progress_done").get(pk=file_id)
    return max(TAIL_BATCH, min(batch, (total - done) // (2 * sharing)))


@transaction.atomic
def _publish(file_id: str, markdown: DocumentMarkdown) -> None:
    """Make the new Markdown the active one and supersede older revisions."""
    from retrieval.services import chunks_retrievable_set

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
    _ready_on(file_id, markdown, ready_at=record.ready_at or now)


# --- recovery and retries -------------------------------------------------------


def ingestion_resume_stalled() -> list[str]:
    """Re-queue files whose worker died (lease expired) or whose message was lost."""
    now = timezone.now()
    quiet = now - timedelta(seconds=settings.PROVENANCE_INGEST_LEASE_SECONDS)
    stalled = File.objects.filter(status__in=IN_PROGRESS_STATUSES).filter(
        Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True, updated_at__lt=quiet)
    )
    from documents.tasks import pipeline_for

    file_ids = []
    for pk in stalled.values_list("pk", flat=True):
        file_id = str(pk)
        File.objects.filter(pk=file_id).update(updated_at=now)
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
    """Run a failed file's ingestion again from the start."""
    _requeue(file, status=FileStatus.FAILED)


def _requeue(file: File, *, queue: str | None = None, **still: object) -> bool:
    """Back to ``pending`` and queued on ``queue``, if the file still matches ``still``."""
    updated = File.objects.filter(pk=file.pk, **still).update(
        status=FileStatus.PENDING,
        error_message="",
        refused_by="",
        lease_expires_at=None,
        progress_done=0,
        progress_total=0,
        updated_at=timezone.now(),
    )
    if updated:
        ingestion_queue(file_id=file.pk, queue=queue)
    return bool(updated)


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
    answers that cited them stay for evidence, and the deletion is recorded.

    Raises :class:`AlreadyDeleted` when no revision is left to delete, so a
    repeated request records no second deletion.
    """
    from audit.events import document_event_record
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
    now = timezone.now()
    File.objects.filter(pk__in=live).update(deleted_at=now, deletion_reason=reason)
    chunks_retrievable_set(Chunk.objects.filter(file__in=revisions), retrievable=False)
