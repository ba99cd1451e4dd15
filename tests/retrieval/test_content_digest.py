"""The index hash follows what can be retrieved, updated by each change.

Every publish, new revision and deletion must leave each index's digest equal
to the digest of its retrievable chunks recomputed from scratch; the digest is
a set's, so an index that returns to an earlier content returns to its earlier
hash; what bypasses the ingestion code is found and mended by the command.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from django.core.management import CommandError, call_command

from documents.ingestion import file_delete
from documents.models import Chunk
from retrieval.content_digest import (
    EMPTY,
    digest_changed,
    digest_minus,
    digest_of,
    digest_plus,
    index_hash_of,
)
from retrieval.models import VectorDatabase
from retrieval.services import index_digest_recomputed
from tests import factories
from tests.conftest import wait_for_status
from tests.support.worker import WorkerProcess

CHUNKS = [(uuid.uuid4(), hashlib.sha256(str(i).encode()).hexdigest()) for i in range(9000)]


def test_the_digest_is_a_set_digest() -> None:
    forward = digest_of(CHUNKS)
    assert digest_of(reversed(CHUNKS)) == forward != EMPTY
    # ids as text or as UUIDs are the same chunk
    assert digest_of((str(i), h) for i, h in CHUNKS) == forward
    assert digest_changed(forward, added=(), removed=CHUNKS[100:]) == digest_of(CHUNKS[:100])
    assert digest_changed(EMPTY, added=CHUNKS[:5], removed=CHUNKS[:5]) == EMPTY
    # a change hashed beforehand (outside the index's lock) combines the same way
    head, tail = digest_of(CHUNKS[:100]), digest_of(CHUNKS[100:])
    assert digest_plus(head, tail) == forward
    assert digest_minus(forward, tail) == head
    assert digest_minus(EMPTY, head) == digest_changed(EMPTY, added=(), removed=CHUNKS[:100])
    # one chunk's content changes the digest, and so does a chunk counted twice
    edited = [(CHUNKS[0][0], "0" * 64), *CHUNKS[1:]]
    assert digest_of(edited) != forward
    assert digest_changed(forward, added=CHUNKS[:1], removed=()) != forward
    with pytest.raises(ValueError, match="2048 bytes"):
        digest_changed(b"short", added=(), removed=())
    with pytest.raises(ValueError, match="2048 bytes"):
        digest_plus(forward, b"short")


def test_the_hash_covers_the_model_and_the_analyzer() -> None:
    digest = digest_of(CHUNKS[:3])
    base = index_hash_of(embed_model="m", analyzer="english", digest=digest)
    assert len(base) == 64
    assert index_hash_of(embed_model="m2", analyzer="english", digest=digest) != base
    assert index_hash_of(embed_model="m", analyzer="simple", digest=digest) != base
    assert index_hash_of(embed_model="m", analyzer="english", digest=EMPTY) != base


def _database_agrees(database: VectorDatabase) -> str:
    """The running digest equals the one recomputed from the retrievable chunks."""
    database.refresh_from_db()
    recomputed = index_digest_recomputed(database_id=database.pk)
    assert bytes(database.content_digest) == recomputed
    assert database.index_hash == index_hash_of(
        embed_model=database.embed_model, analyzer=database.analyzer, digest=recomputed
    )
    return database.index_hash


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_publish_revision_and_deletion_keep_the_digest_exact(celery_worker: WorkerProcess) -> None:
    source = factories.data_source()
    database = source.vector_database
    empty = _database_agrees(database)
    assert bytes(database.content_digest) == EMPTY

    first = factories.upload(source, "leave.md", b"# Leave\n\nTwenty days a year.\n").file
    assert wait_for_status(first.pk).status == "ready"
    with_leave = _database_agrees(database)
    assert with_leave != empty

    # a copy read now and saved whole later (as the admin's change form does) ...
    stale_copy = VectorDatabase.objects.get(pk=database.pk)
    other = factories.upload(source, "travel.md", b"# Travel\n\nEconomy class only.\n").file
    assert wait_for_status(other.pk).status == "ready"
    both = _database_agrees(database)
    stale_copy.name = "renamed"
    stale_copy.save()
    # ... renames the index without putting back the digest it read
    assert _database_agrees(database) == both
    assert database.name == "renamed"

    # a new revision of leave.md replaces the first one's chunks in the digest
    second = factories.upload(source, "leave.md", b"# Leave\n\nThirty days a year.\n").file
    assert wait_for_status(second.pk).status == "ready"
    revised = _database_agrees(database)
    assert revised not in (both, with_leave)
    assert not Chunk.objects.filter(file=first, is_retrievable=True).exists()

    # deleting leave.md takes out its retrievable revision; the hash is travel.md's alone
    file_delete(file=second, reason="withdrawn")
    only_travel = _database_agrees(database)
    file_delete(file=other, reason="withdrawn")
    assert _database_agrees(database) == empty
    assert only_travel not in (empty, both, revised)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_the_command_finds_and_mends_a_bypassed_change(celery_worker: WorkerProcess) -> None:
    source = factories.data_source()
    record = factories.upload(source, "leave.md", b"# Leave\n\nTwenty days a year.\n").file
    assert wait_for_status(record.pk).status == "ready"
    database = source.vector_database
    before = _database_agrees(database)
    call_command("rebuild_index_hash", "--check")

    # an UPDATE that bypasses chunks_retrievable_set leaves the digest behind ...
    Chunk.objects.filter(file=record).update(is_retrievable=False)
    with pytest.raises(CommandError, match=str(database.pk)):
        call_command("rebuild_index_hash", "--check")
    database.refresh_from_db()
    assert database.index_hash == before  # --check changes nothing

    # ... until the command rebuilds it from the chunks
    call_command("rebuild_index_hash", "--database", str(database.pk))
    after = _database_agrees(database)
    assert after != before
    call_command("rebuild_index_hash", "--check")

    # a hash that is not its digest's (written by older code) is found and mended too
    VectorDatabase.objects.filter(pk=database.pk).update(index_hash="0" * 64)
    with pytest.raises(CommandError, match=str(database.pk)):
        call_command("rebuild_index_hash", "--check")
    call_command("rebuild_index_hash")
    assert _database_agrees(database) == after


@pytest.mark.django_db
def test_a_new_index_starts_with_the_hash_of_no_chunks() -> None:
    organization = factories.organization()
    database = VectorDatabase.objects.create(
        organization=organization, name="extra", embed_model="m", embed_dimensions=384
    )
    assert database.index_hash == index_hash_of(
        embed_model="m", analyzer=database.analyzer, digest=EMPTY
    )
    call_command("rebuild_index_hash", "--check", "--database", str(database.pk))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "message"),
    [("not-a-uuid", "not an index id"), ("0b8f6a52-3c1e-4d07-9a7e-5f2d4c8b1e90", "no such index")],
)
def test_the_command_refuses_an_unknown_index(value: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("rebuild_index_hash", "--check", "--database", value)
