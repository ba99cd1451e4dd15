"""Vector databases: which data sources are indexed together, and how."""

from __future__ import annotations

import uuid

from django.db import models


class VectorDatabase(models.Model):
    """A set of data sources indexed with one embed model and one analyzer.

    ``index_hash`` fingerprints the embed model, the analyzer and the content
    of every chunk in the index; it changes whenever the index changes, and
    every answer records the hash it was produced from.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="vector_databases"
    )
    name = models.CharField(max_length=200)
    embed_model = models.CharField(max_length=200)
    embed_dimensions = models.PositiveIntegerField()
    pooling = models.CharField(max_length=50, default="mean")
    analyzer = models.CharField(max_length=50, default="english")
    index_hash = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="vectordb_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.embed_model})"
