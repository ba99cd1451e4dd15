"""Vector databases: creating them and keeping their ``index_hash`` current."""

from __future__ import annotations

from collections import defaultdict
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet

from documents.fulltext import ANALYZER
from documents.models import Chunk, Organization
from retrieval.content_digest import digest_minus, digest_of, digest_plus
from retrieval.embedders import EMBED_DIMENSIONS, configured_model_id
from retrieval.models import VectorDatabase

_UPDATE_BATCH = 5000


def vector_database_default(*, organization: Organization) -> VectorDatabase:
    """The organization's default index, created on first use."""
    database, _ = VectorDatabase.objects.get_or_create(
        organization=organization,
        name="default",
        defaults={
            "embed_model": configured_model_id(),
            "embed_dimensions": EMBED_DIMENSIONS,
            "pooling": "mean",
            "analyzer": ANALYZER,
        },
    )
    return database


@transaction.atomic
def chunks_retrievable_set(chunks: QuerySet[Chunk], *, retrievable: bool) -> int:
    """Make ``chunks`` retrievable (or not), carrying their indexes' hashes along.

    The one way the flag changes: only rows whose flag differs are locked,
    changed and put into (or taken out of) their index's digest, so the hash
    follows exactly what this call changed. Returns how many chunks changed.
    """
    changed = list(
        chunks.filter(is_retrievable=not retrievable)
        .select_for_update(of=("self",))
        .values_list("pk", "vector_database_id", "content_hash")
    )
    for start in range(0, len(changed), _UPDATE_BATCH):
        ids = [row[0] for row in changed[start : start + _UPDATE_BATCH]]
        Chunk.objects.filter(pk__in=ids).update(is_retrievable=retrievable)
    by_database: dict[UUID, list[tuple[UUID, str]]] = defaultdict(list)
    for chunk_id, database_id, content_hash in changed:
        by_database[database_id].append((chunk_id, content_hash))
    # hashed before the index's row is locked; indexes locked in one order
    shifts = {database_id: digest_of(pairs) for database_id, pairs in by_database.items()}
    combine = digest_plus if retrievable else digest_minus
    for database_id in sorted(shifts, key=str):
        database = VectorDatabase.objects.select_for_update().get(pk=database_id)
        _identity_save(database, combine(bytes(database.content_digest), shifts[database_id]))
    return len(changed)


@transaction.atomic
def index_hash_rebuild(*, database_id: UUID) -> str:
    """The digest recomputed from every retrievable chunk (O(chunks)): for what
    bypassed :func:`chunks_retrievable_set` (a bulk load, a data-only restore)."""
    database = VectorDatabase.objects.select_for_update().get(pk=database_id)
    _identity_save(database, index_digest_recomputed(database_id=database.pk))
    return database.index_hash


def index_digest_recomputed(*, database_id: UUID) -> bytes:
    """The digest of the index's retrievable chunks as they are now."""
    rows = (
        Chunk.objects.filter(vector_database_id=database_id, is_retrievable=True)
        .values_list("pk", "content_hash")
        .iterator(chunk_size=_UPDATE_BATCH)
    )
    return digest_of(rows)


def _identity_save(database: VectorDatabase, digest: bytes) -> None:
    database.content_digest = digest
    database.index_hash = database.hash_of(digest)
    database.save(update_fields=["content_digest", "index_hash", "updated_at"])
