"""One file's embedding shared between processes: no chunk embedded twice, none lost.

The helper is played by a second database connection in a thread, holding a
batch of chunk rows locked as ``file_embed_share`` does while the model runs.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import connection, connections, transaction
from django.test import override_settings
from django.utils import timezone

from documents import ingestion
from documents.ingestion.batches import _batch_size, batch_embed
from documents.models import Chunk, File
from retrieval.embedders import MiniLmEmbedder
from tests import factories
from tests.support import squad

pytestmark = pytest.mark.django_db(transaction=True)


def _file_waiting_for_embedding(corpus: Path) -> File:
    """Converted and chunked in one transaction whose lease keeps any worker's hands off."""
    source = factories.data_source()
    document = "\n".join(squad.article_markdown(a) for a in squad.load(corpus)[:2]).encode()
    with transaction.atomic():
        record = factories.upload(source, "shared.md", document).file
        ingestion.file_convert(file_id=str(record.pk))
        ingestion.file_chunk(file_id=str(record.pk))
        File.objects.filter(pk=record.pk).update(
            lease_expires_at=timezone.now() + timedelta(hours=1)
        )
    record.refresh_from_db()
    assert record.status == "embedding"
    return record


def _release(record: File) -> None:
    File.objects.filter(pk=record.pk).update(lease_expires_at=None)


def _vectors(record: File) -> dict:
    return {c.pk: c.embedding for c in Chunk.objects.filter(file=record)}


def test_a_helper_embeds_without_publishing_and_the_owner_does_not_redo_it(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    markdown = record.markdowns.get()
    total = Chunk.objects.filter(file=record).count()
    assert total > 64

    batches = ingestion.file_embed_share(file_id=str(record.pk), markdown_id=str(markdown.pk))
    record.refresh_from_db()
    assert batches == len(_tail_batches(total))
    assert record.status == "embedding" and record.progress_done == total
    assert not record.markdowns.filter(is_active=True).exists(), "a helper never publishes"
    helped = _vectors(record)
    assert all(v is not None for v in helped.values())

    _release(record)
    assert ingestion.file_embed(file_id=str(record.pk))
    record.refresh_from_db()
    assert record.status == "ready"
    after = _vectors(record)
    assert all(np.array_equal(after[pk], helped[pk]) for pk in helped)
    # a helper arriving after publication finds nothing to do
    assert ingestion.file_embed_share(file_id=str(record.pk), markdown_id=str(markdown.pk)) == 0


def _tail_batches(total: int) -> list[int]:
    """Batch sizes one process takes alone: 64 while over 256 are left, then a quarter
    of what is left (two processes share the file), never under 16."""
    sizes, left = [], total
    while left:
        sizes.append(min(left, max(16, min(64, left // 4))))
        left -= sizes[-1]
    return sizes


def test_batches_shrink_near_the_end_so_sharing_processes_finish_together(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    markdown = record.markdowns.get()
    total = Chunk.objects.filter(file=record).count()
    file_id = str(record.pk)
    assert _batch_size(file_id, sharing=2) == max(16, min(64, total // 4))
    taken = []
    while batch_embed(file_id, markdown, wait=False, sharing=2):
        taken.append(Chunk.objects.filter(file=record, embedding__isnull=False).count())
    sizes = [b - a for a, b in zip([0, *taken], taken, strict=False)]
    assert sizes == _tail_batches(total)
    assert sizes[-2] <= 16 < 64, "the last batches are one forward pass, not a full batch"


def test_batches_are_taken_shortest_chunks_first(corpus: Path) -> None:
    """So the model's runs hold texts of one length and little of them is padding."""
    record = _file_waiting_for_embedding(corpus)
    markdown = record.markdowns.get()
    counts = sorted(Chunk.objects.filter(file=record).values_list("token_count", flat=True))
    assert counts[0] < counts[-1]
    taken: list[int] = []
    while batch_embed(str(record.pk), markdown, wait=False, sharing=1):
        embedded = Chunk.objects.filter(file=record, embedding__isnull=False)
        taken = list(embedded.order_by("token_count").values_list("token_count", flat=True))
        assert taken == counts[: len(taken)], "a longer chunk was embedded before a shorter one"
    assert len(taken) == len(counts)


def test_a_process_embedding_alone_takes_full_batches(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    markdown = record.markdowns.get()
    total = Chunk.objects.filter(file=record).count()
    sizes, done = [], 0
    while batch_embed(str(record.pk), markdown, wait=False, sharing=1):
        now = Chunk.objects.filter(file=record, embedding__isnull=False).count()
        sizes.append(now - done)
        done = now
    assert sizes == [64] * (total // 64) + ([total % 64] if total % 64 else [])


def _helper_thread(record: File, *, commit: bool, locked: list, holding: threading.Event,
                   release: threading.Event) -> threading.Thread:  # fmt: skip
    """Lock the first batch like a helper; then embed it (fp32, so its vectors are
    recognisable) and commit, or roll back as a helper killed mid-batch would."""

    def run() -> None:
        try:
            with transaction.atomic():
                batch = list(
                    Chunk.objects.select_for_update(skip_locked=True)
                    .filter(file=record, embedding__isnull=True)
                    .order_by("position")[:64]
                )
                locked.extend(c.pk for c in batch)
                holding.set()
                release.wait(60)
                if not commit:
                    transaction.set_rollback(True)
                    return
                vectors = MiniLmEmbedder(precision="fp32").embed_documents(
                    [c.chunk_text for c in batch]
                )
                for chunk, vector in zip(batch, vectors, strict=True):
                    chunk.embedding = vector
                Chunk.objects.bulk_update(batch, ["embedding"])
        finally:
            connections.close_all()

    return threading.Thread(target=run, daemon=True)


def _owner_runs_while_helper_holds_a_batch(record: File, *, commit: bool) -> list:
    locked: list = []
    holding, release = threading.Event(), threading.Event()
    helper = _helper_thread(record, commit=commit, locked=locked, holding=holding, release=release)
    helper.start()
    assert holding.wait(30)
    _release(record)
    waiting = threading.Timer(2.0, release.set)  # the owner must wait for the helper
    waiting.start()
    with override_settings(PROVENANCE_EMBED_HELPERS=0):
        assert ingestion.file_embed(file_id=str(record.pk))
    assert release.is_set(), "the owner published before the helper's batch was settled"
    helper.join(60)
    return locked


def test_the_owner_skips_a_helpers_batch_and_keeps_its_vectors(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    locked = _owner_runs_while_helper_holds_a_batch(record, commit=True)
    record.refresh_from_db()
    assert record.status == "ready"
    fp32 = MiniLmEmbedder(precision="fp32")
    chunks = {c.pk: c for c in Chunk.objects.filter(file=record)}
    assert len(locked) == 64 and all(chunks[pk].embedding is not None for pk in chunks)
    texts = [chunks[pk].chunk_text for pk in locked]
    expected = fp32.embed_documents(texts)
    for pk, vector in zip(locked, expected, strict=True):  # the helper's own fp32 vectors
        embedding = chunks[pk].embedding
        assert embedding is not None and np.allclose(embedding, vector, atol=1e-6)


def test_a_helper_that_dies_mid_batch_leaves_its_chunks_to_the_owner(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    locked = _owner_runs_while_helper_holds_a_batch(record, commit=False)
    record.refresh_from_db()
    assert record.status == "ready"
    assert len(locked) == 64
    assert not Chunk.objects.filter(file=record, embedding__isnull=True).exists()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM documents_chunk WHERE file_id = %s AND is_retrievable",
            [record.pk],
        )
        assert cursor.fetchone()[0] == Chunk.objects.filter(file=record).count()


def _another_file_waiting() -> File:
    """A file of another organization waiting to be converted, leased so no worker
    takes it: the upload a slice must make way for."""
    with transaction.atomic():
        other = factories.upload(
            factories.data_source(), "small.md", b"# Small\n\nOne page.\n"
        ).file
        File.objects.filter(pk=other.pk).update(
            lease_expires_at=timezone.now() + timedelta(hours=1)
        )
    return other


def _missing(record: File) -> int:
    return Chunk.objects.filter(file=record, embedding__isnull=True).count()


def test_a_slice_goes_on_while_no_other_file_waits(corpus: Path) -> None:
    """Passing the turn with nobody behind it would only idle both processes until
    the file's next message comes round the queue."""
    record = _file_waiting_for_embedding(corpus)
    assert Chunk.objects.filter(file=record).count() > 64  # more than one batch
    _release(record)
    with override_settings(PROVENANCE_EMBED_HELPERS=0):
        assert ingestion.file_embed(file_id=str(record.pk), slice_seconds=0.001)
    record.refresh_from_db()
    assert record.status == "ready" and _missing(record) == 0


def test_a_slice_makes_way_for_a_waiting_file_after_one_batch(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    total = Chunk.objects.filter(file=record).count()
    _another_file_waiting()
    _release(record)
    with override_settings(PROVENANCE_EMBED_HELPERS=0):
        assert ingestion.file_embed(file_id=str(record.pk), slice_seconds=0.001)
    # read at once: the next turn's message is queued, and a live worker would need
    # a whole batch of the model before it changed this count
    assert _missing(record) == total - 64
    record.refresh_from_db()
    assert record.status == "embedding" and record.lease_expires_at is None  # turn passed


def test_a_helper_goes_on_past_its_slice_only_while_no_other_file_waits(corpus: Path) -> None:
    record = _file_waiting_for_embedding(corpus)
    markdown_id = str(record.markdowns.get().pk)
    total = Chunk.objects.filter(file=record).count()

    def share() -> int:
        return ingestion.file_embed_share(
            file_id=str(record.pk), markdown_id=markdown_id, slice_seconds=0.001
        )

    other = _another_file_waiting()
    assert share() == 1
    assert _missing(record) == total - _tail_batches(total)[0]

    File.objects.filter(pk=other.pk).update(deleted_at=timezone.now())  # nobody waits now
    assert share() == len(_tail_batches(total)) - 1
    assert _missing(record) == 0
