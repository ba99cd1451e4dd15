"""Stage 2, chunk: the draft Markdown cut into chunks with their Locations,
replacing any earlier try of the stage atomically."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import transaction

from documents.chunk_context import ChunkContexts
from documents.chunking import chunk_markdown
from documents.converters.base import SourceSpan
from documents.ingestion.convert import draft_markdown
from documents.ingestion.limits import CHUNKS_LIMIT, LimitExceeded, limit_check
from documents.ingestion.page_words import page_words_reread, words_unpacked
from documents.ingestion.status import advance, file_fail
from documents.leases import Lease, heartbeat, lease_claim
from documents.locating import Locator
from documents.markdown_structure import MarkdownStructure
from documents.models import Chunk, DocumentMarkdown, FileStatus, Location, SourceBoxes


def file_chunk(*, file_id: str) -> bool:
    """Cut the Markdown into chunks with their Locations, replacing any earlier try."""
    lease = lease_claim(file_id, statuses=(FileStatus.CHUNKING,), working=FileStatus.CHUNKING)
    if lease is None:
        return False
    with heartbeat(lease):
        markdown = draft_markdown(file_id)
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
    page_words = words_unpacked(kept, record.pk) if kept is not None else None
    if page_words is None:
        page_words = page_words_reread(record)
    chunk_spans = chunk_markdown(
        structure,
        target=settings.PROVENANCE_CHUNK_TARGET_TOKENS,
        overlap=settings.PROVENANCE_CHUNK_OVERLAP_TOKENS,
    )
    limit_check(CHUNKS_LIMIT, len(chunk_spans))  # before the costly locating
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
    advance(lease.rows(), to=FileStatus.EMBEDDING, progress_done=0, progress_total=len(chunks))
    return True
