"""One batch of a file's chunks embedded under row locks, sized to the work left,
and the file's progress saved after it."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from documents.chunk_context import embedding_text
from documents.models import Chunk, DocumentMarkdown, File, FileStatus

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


# the smallest batch the end of an embed stage shrinks to: one forward pass of the model
TAIL_BATCH = 16


def batch_embed(file_id: str, markdown: DocumentMarkdown, *, wait: bool, sharing: int = 1) -> bool:
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
    embed_progress_save(file_id, markdown)
    return True


def embed_progress_save(file_id: str, markdown: DocumentMarkdown) -> None:
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
