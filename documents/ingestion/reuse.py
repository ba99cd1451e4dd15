"""Vectors reused: a chunk whose exact text an earlier conversion or revision
embedded in the same vector database takes that vector instead of the model's."""

from __future__ import annotations

import logging

from django.db import connection, transaction

from documents.ingestion.batches import embed_progress_save
from documents.models import DocumentMarkdown, File

# the pipeline's one logger, whichever module of it writes
logger = logging.getLogger("documents.ingestion")


def vectors_reuse(file_id: str, markdown: DocumentMarkdown) -> int:
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
        embed_progress_save(file_id, markdown)
    return reused
