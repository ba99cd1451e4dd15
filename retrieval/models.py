"""Vector databases: which data sources are indexed together, and how."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models

from documents.fulltext import ANALYZER
from retrieval.content_digest import empty as empty_digest
from retrieval.content_digest import index_hash_of


class VectorDatabase(models.Model):
    """A set of data sources indexed with one embed model and one analyzer.

    ``index_hash`` fingerprints the embed model, the analyzer and the content
    of every retrievable chunk in the index (through ``content_digest``); it
    changes whenever the index changes, and every answer records the hash it
    was produced from.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="vector_databases"
    )
    name = models.CharField(max_length=200)
    embed_model = models.CharField(max_length=200)
    embed_dimensions = models.PositiveIntegerField()
    pooling = models.CharField(max_length=50, default="mean")
    analyzer = models.CharField(max_length=50, default=ANALYZER)
    index_hash = models.CharField(max_length=64, blank=True, default="")
    # the retrievable chunks' set digest (retrieval/content_digest.py), which
    # index_hash covers; updated by each change, not recomputed from every chunk
    content_digest = models.BinaryField(default=empty_digest, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="vectordb_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.embed_model})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """A new index starts with the hash of no chunks. A full save of a copy read
        earlier (the admin's change form) leaves the digest and the hash alone: only
        ``retrieval.services`` writes them, naming them, under the row's lock, and
        an older copy would undo the changes made since it was read."""
        if self._state.adding:
            if not self.index_hash:
                self.index_hash = self.hash_of(bytes(self.content_digest))
        elif kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                field.name
                for field in self._meta.concrete_fields
                if not field.primary_key and field.name not in ("content_digest", "index_hash")
            ]
        super().save(*args, **kwargs)

    def hash_of(self, digest: bytes) -> str:
        """The ``index_hash`` this index has when its chunks' digest is ``digest``."""
        return index_hash_of(embed_model=self.embed_model, analyzer=self.analyzer, digest=digest)

    @property
    def embed_model_id(self) -> str:
        """``model:pooling``, as citation payloads and answers record the embed model."""
        return f"{self.embed_model}:{self.pooling}"


class LexicalPosting(models.Model):
    """One lexeme of one retrievable chunk with its BM25 term weight: the full-text index.

    The GIN index over ``search_vector`` answers "which chunks hold these words",
    not "which hold them best": ranking its matches means reading every matching
    chunk's tsvector, so a bounded candidate set was the first matches in table
    order. Postings ordered by weight within (data source, lexeme) give each
    word's best chunks from one index range. A trigger on ``documents_chunk``
    (migration 0002) writes them whenever a chunk becomes retrievable and deletes
    them when it stops being so, whichever statement changes the chunk; what
    bypasses triggers (a data-only restore, replication) is mended by
    ``manage.py rebuild_postings``.
    """

    pk = models.CompositePrimaryKey("chunk", "lexeme")
    chunk = models.ForeignKey(
        "documents.Chunk",
        on_delete=models.DO_NOTHING,
        db_constraint=False,  # the trigger owns these rows; no per-row FK check
        db_index=False,  # the primary key leads with it
        related_name="+",
    )
    lexeme = models.TextField(db_collation="C")
    data_source = models.ForeignKey(
        "documents.DataSource",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    # tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)); the query multiplies by idf
    weight = models.FloatField()

    class Meta:
        indexes = [
            # the chunk breaks ties between equal weights: the same cut every time
            models.Index(
                fields=["data_source", "lexeme", "-weight", "chunk"], name="posting_best_first"
            )
        ]

    def __str__(self) -> str:
        return f"{self.lexeme} in {self.chunk_id} ({self.weight:.3f})"
