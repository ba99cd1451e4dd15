"""Stage 3, embed: the chunks without a vector embedded in slices that go to the
back of the queue, shared with idle workers, then the conversion published."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from documents.ingestion.batches import batch_embed
from documents.ingestion.convert import draft_markdown
from documents.ingestion.publish import publish
from documents.ingestion.queueing import queue_for
from documents.ingestion.reuse import vectors_reuse
from documents.ingestion.status import file_fail
from documents.leases import Lease, heartbeat, lease_claim, lease_pass
from documents.models import IN_PROGRESS_STATUSES, Chunk, DocumentMarkdown, File, FileStatus

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


def file_embed(
    *, file_id: str, turn: str | None = None, slice_seconds: float | None = None
) -> bool:
    """Embed the chunks still without a vector, then publish.

    A worker runs this in slices of ``slice_seconds``: when a slice is over while
    another file waits (:func:`_slice_over`) and chunks are left, the file goes to
    the back of its queue (:func:`_turn_pass`), so the stages of every other file
    waiting there, a one-page upload of another organization among them, run
    before its next slice. ``turn`` is the token a slice left for the next one;
    ``None`` starts the stage (or takes over a file whose worker died). Without
    ``slice_seconds`` the call embeds the whole file.

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
        markdown = draft_markdown(file_id, text=False)
        if markdown is None:
            file_fail(file_id=file_id, reason="chunks are missing; retry the file", lease=lease)
            return False
        if turn is None:
            vectors_reuse(file_id, markdown)
        return _embed_slice(lease, markdown, slice_seconds)


def _embed_slice(lease: Lease, markdown: DocumentMarkdown, slice_seconds: float | None) -> bool:
    """Batches until the slice is over (then the next turn is queued), the file is
    published, or the file is no longer this slice's (False)."""
    file_id = lease.file_id
    sharing = 1 + _helpers_request(file_id, markdown, slice_seconds)
    deadline = None if slice_seconds is None else time.monotonic() + slice_seconds
    while lease.held():
        if batch_embed(file_id, markdown, wait=False, sharing=sharing):
            if (
                _slice_over(file_id, deadline)
                and Chunk.objects.filter(markdown=markdown, embedding__isnull=True).exists()
            ):
                return _turn_pass(lease)  # else publish now, not a turn later
            continue
        # batches other processes hold: wait for them to commit (or roll back)
        if not batch_embed(file_id, markdown, wait=True, sharing=sharing):
            return publish(lease, markdown)
    logger.info("embedding of %s stopped: cancelled, deleted or taken over", file_id)
    return False


def _turn_pass(lease: Lease) -> bool:
    """Queue the file's next slice at the back of its queue, with the token only that
    message can claim the file with."""
    from documents.tasks import embed_file

    turn = lease_pass(lease)
    if turn is None:
        return False
    queue = queue_for(lease.file_id)
    options = {"queue": queue} if queue else {}
    embed_file.apply_async((lease.file_id, turn), **options)
    return True


def file_embed_share(
    *, file_id: str, markdown_id: str, sharing: int = 2, slice_seconds: float | None = None
) -> int:
    """Help the owner of a file's embed stage; returns how many batches this embedded.

    Holds no lease (it never renews one) and never publishes: it only fills vectors
    of the draft the owner is embedding, for one slice (:func:`_slice_over`), and stops as soon
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
        if not batch_embed(file_id, markdown, wait=False, sharing=sharing):
            break
        batches += 1
        if _slice_over(file_id, deadline):
            break
    return batches


def _slice_over(file_id: str, deadline: float | None) -> bool:
    """A slice ends when its time is up and another file is waiting for a worker.

    With no other file in progress, passing the turn would only stop both
    processes (owner and helper) until the file's next message comes back round
    the queue, a second or more of idle cores per slice; so the slice goes on,
    and a file uploaded meanwhile waits at most one batch past the slice's time,
    as before."""
    if deadline is None or time.monotonic() < deadline:
        return False
    return _others_in_progress(file_id)


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
        queue = queue_for(file_id)
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
