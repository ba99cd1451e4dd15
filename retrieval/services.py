"""Vector databases: creating them and keeping their ``index_hash`` current."""

from __future__ import annotations

from django.db import connection, transaction

from documents.fulltext import ANALYZER
from retrieval.embedders import EMBED_DIMENSIONS, configured_model_id
from retrieval.models import VectorDatabase


def vector_database_default(*, organization) -> VectorDatabase:  # noqa: ANN001
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
def index_hash_refresh(*, database_id: str) -> str:
    """Recompute the fingerprint of everything retrievable in the index.

    It covers the embed model, the analyzer and the id + content hash of every
    retrievable chunk, so any change in what can be retrieved changes the hash.
    """
    database = VectorDatabase.objects.select_for_update().get(pk=database_id)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT encode(sha256(convert_to(
                %s || '|' || %s || '|' || coalesce(string_agg(c.id::text || ':' || c.content_hash,
                                                  ',' ORDER BY c.id), ''), 'UTF8')), 'hex')
            FROM documents_chunk c
            WHERE c.vector_database_id = %s AND c.is_retrievable
            """,
            [database.embed_model, database.analyzer, database.pk],
        )
        (digest,) = cursor.fetchone()
    database.index_hash = digest
    database.save(update_fields=["index_hash", "updated_at"])
    return digest
