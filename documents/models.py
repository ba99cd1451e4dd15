"""Organizations, data sources, uploaded files (one row per revision), their
converted Markdown, chunks and the locations that tie chunks to the file."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import OpClass
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F
from django.db.models.functions import Cast
from django.utils import timezone
from pgvector.django import HalfVectorField, HnswIndex, VectorField

from core.roles import Role
from documents.fulltext import TEXT_SEARCH_CONFIG, indexed_text, spaced_scripts

EMBEDDING_DIMENSIONS = 384


class Organization(models.Model):
    """A tenant: nothing of one organization is ever visible to another."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class OrganizationMember(models.Model):
    """A user's membership of an organization (web pages and the admin scope by it)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "user"], name="member_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.role})"


class ApiKey(models.Model):
    """A REST credential of one organization.

    Only the SHA-256 of the secret is stored; the key is shown once, when it is
    made. ``prefix`` (public) finds the row, the hash proves the secret.
    """

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=200, blank=True, default="")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.organization})"


class DataSource(models.Model):
    """A named collection of files ("Human Resources") indexed in one vector database."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="data_sources"
    )
    name = models.CharField(max_length=200)
    vector_database = models.ForeignKey(
        "retrieval.VectorDatabase", on_delete=models.PROTECT, related_name="data_sources"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="datasource_unique_name")
        ]

    def __str__(self) -> str:
        return self.name


class FileStatus(models.TextChoices):
    """Ingestion state of one file revision.

    pending → converting → chunking → embedding → ready; any stage → failed
    (with ``error_message``), also when its ingestion is cancelled ("cancelled
    by …") or its document deleted meanwhile. A failed file can be retried
    (→ pending). A ready file converted again (``reconvert``) goes ready →
    pending → … → ready and stays searchable meanwhile; if that fails or is
    cancelled it is ready again on its previous conversion, with
    ``error_message`` saying why.
    """

    PENDING = "pending"
    CONVERTING = "converting"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    READY = "ready"
    FAILED = "failed"


IN_PROGRESS_STATUSES = (
    FileStatus.PENDING,
    FileStatus.CONVERTING,
    FileStatus.CHUNKING,
    FileStatus.EMBEDDING,
)


class File(models.Model):
    """One revision of an uploaded file; its original bytes are immutable in storage.

    Re-uploading the same name into the same data source adds a revision and
    marks the older one superseded once the new one is ready; old revisions
    stay readable for audit.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    document_id = models.UUIDField(
        default=uuid.uuid4, db_index=True, help_text="Stable across revisions of the same name."
    )
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="files")
    data_source = models.ForeignKey(DataSource, on_delete=models.PROTECT, related_name="files")
    name = models.CharField(max_length=255)
    kind = models.CharField(max_length=20)
    content_type = models.CharField(max_length=120)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64, db_index=True)
    storage_key = models.CharField(max_length=500, unique=True)
    revision = models.PositiveIntegerField(default=1)
    superseded_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(
        max_length=20, choices=FileStatus.choices, default=FileStatus.PENDING, db_index=True
    )
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    error_message = models.TextField(blank=True, default="")
    # "name version" of the converter that refused these bytes for good (encrypted,
    # no text layer, malformed), or "SETTING=value" of the per-file limit they exceed:
    # retrying with it cannot help, a newer converter or a raised limit may
    refused_by = models.CharField(max_length=120, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    # the stage run holding the file (documents/leases.py): its token, renewed expiry
    lease_owner = models.CharField(max_length=32, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    uploaded_with_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    deletion_reason = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["data_source", "name", "revision"], name="file_unique_revision"
            )
        ]
        indexes = [models.Index(fields=["data_source", "name"], name="file_by_name")]
        # officers audit and change nothing; an operator runs files through ingestion again
        permissions = [("reingest_file", "Can retry or convert files again")]

    def __str__(self) -> str:
        return f"{self.name} (rev {self.revision})"

    @property
    def is_current(self) -> bool:
        """The revision of its name that answers are drawn from: it has been ready,
        no newer revision is ready yet, and it is not deleted. A newer revision
        still ingesting, or failed, leaves this one current and is not itself."""
        return self.ready_at is not None and self.superseded_at is None and self.deleted_at is None


class DocumentMarkdown(models.Model):
    """The Markdown one converter produced for one file revision.

    Re-running conversion (a new converter version) adds a row; the old row
    and its chunks stay for the answers that cited them. ``published_at`` is
    set when its chunks are fully embedded and it becomes the active one.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="markdowns")
    converter = models.CharField(max_length=100)
    converter_version = models.CharField(max_length=40)
    markdown = models.TextField()
    sha256 = models.CharField(max_length=64)
    line_pages = models.JSONField(default=list, blank=True)
    front_matter = models.TextField(blank=True, default="")
    body_start = models.PositiveIntegerField(default=0)
    page_count = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["file", "converter", "converter_version"], name="markdown_per_converter"
            ),
            models.UniqueConstraint(
                fields=["file"], condition=models.Q(is_active=True), name="one_active_markdown"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.file} via {self.converter} {self.converter_version}"


class SourceBoxes(models.Model):
    """PDF text boxes behind Markdown spans, kept so locations can be recomputed."""

    markdown = models.OneToOneField(
        DocumentMarkdown, on_delete=models.CASCADE, related_name="boxes"
    )
    spans = models.JSONField(default=list)
    # a PDF's page words (word_boxes.words_pack), read beside the conversion on the
    # other core, until the chunk stage has narrowed the chunks' boxes with them
    page_words = models.BinaryField(null=True, blank=True)

    def __str__(self) -> str:
        return f"boxes of {self.markdown_id}"


class Chunk(models.Model):
    """A slice ``markdown[char_start:char_end]`` of one file revision's Markdown."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="chunks")
    markdown = models.ForeignKey(DocumentMarkdown, on_delete=models.PROTECT, related_name="chunks")
    # denormalised so the retrieval query filters on one table next to the HNSW index
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    data_source = models.ForeignKey(DataSource, on_delete=models.PROTECT, related_name="+")
    is_retrievable = models.BooleanField(
        default=False, help_text="Active Markdown of a current, undeleted revision."
    )
    vector_database = models.ForeignKey(
        "retrieval.VectorDatabase", on_delete=models.PROTECT, related_name="chunks"
    )
    position = models.PositiveIntegerField()
    chunk_text = models.TextField()
    token_count = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    section = models.TextField(blank=True, default="")
    hierarchy = models.JSONField(default=list)
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()
    line_number_start = models.PositiveIntegerField()
    line_number_end = models.PositiveIntegerField()
    page_start = models.PositiveIntegerField(null=True, blank=True)
    page_end = models.PositiveIntegerField(null=True, blank=True)
    # the record the chunk belongs to (documents/chunk_context.py): embedded and indexed
    # with the text, never part of it; "" for chunks made before contexts existed
    context = models.TextField(blank=True, default="")
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    search_vector = models.GeneratedField(
        # Latin words written against Arabic, CJK, ... letters are words of their own
        expression=SearchVector(
            spaced_scripts(indexed_text(F("chunk_text"), F("context"))),
            config=TEXT_SEARCH_CONFIG,
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["markdown", "position"], name="chunk_unique_position")
        ]
        indexes = [
            # ef_construction 128, not 64: a small tenant's chunks stay reachable in
            # one shared graph (64 left recall@10 below the 0.98 target).
            # The graph holds the vectors cast to half precision: a smaller graph,
            # searched faster, at the same recall@10;
            # search.py orders by this expression and reports full-precision distances.
            HnswIndex(
                OpClass(
                    Cast("embedding", HalfVectorField(dimensions=EMBEDDING_DIMENSIONS)),
                    name="halfvec_cosine_ops",
                ),
                name="chunk_embedding_hnsw_half",
                m=16,
                ef_construction=128,
                # only what can be retrieved: drafts being embedded and superseded or
                # deleted revisions stay out of the graph (one insert per published
                # chunk instead of two, and a smaller graph to search)
                condition=models.Q(is_retrievable=True),
            ),
            models.Index(
                fields=["data_source"],
                name="chunk_retrievable",
                condition=models.Q(is_retrievable=True),
            ),
            # the embed stage's next batch, shortest chunks first, read off the index
            # instead of sorting every chunk a large file has left for each batch
            models.Index(
                fields=["markdown", "token_count", "position"],
                name="chunk_to_embed",
                condition=models.Q(embedding__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"chunk {self.position} of {self.file}"


class Location(models.Model):
    """Where (part of) a chunk sits: Markdown lines and offsets, headings, page, boxes.

    A chunk has one Location per page and per section it touches; their
    character ranges partition the chunk's range.
    """

    chunk = models.ForeignKey(Chunk, on_delete=models.PROTECT, related_name="locations")
    ordinal = models.PositiveSmallIntegerField()
    line_number_start = models.PositiveIntegerField()
    line_number_end = models.PositiveIntegerField()
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()
    hierarchy = models.JSONField(default=list)
    page_number = models.PositiveIntegerField(null=True, blank=True)
    boxes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["chunk", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["chunk", "ordinal"], name="location_unique_ordinal")
        ]

    def __str__(self) -> str:
        return f"lines {self.line_number_start}-{self.line_number_end} p.{self.page_number}"


class RevisionSeal(models.Model):
    """What a published conversion of a file revision held, chained as evidence.

    Sources are write-once in the database (migration 0015's triggers), but the
    owner can switch triggers off; the seal is in the keyed hash chain, so the
    verifier re-derives every sealed chunk's hash from its text and names the first
    that no longer matches (documents/seals.py). One seal per published Markdown.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="seals")
    markdown = models.OneToOneField(DocumentMarkdown, on_delete=models.PROTECT, related_name="seal")
    original_sha256 = models.CharField(max_length=64)
    original_size = models.BigIntegerField()
    markdown_sha256 = models.CharField(max_length=64)
    # [chunk id, position, content hash, char_start, char_end] in position order
    chunks = models.JSONField(default=list)
    # SHA-256 over every location of those chunks (documents/seals.py: locations_digest)
    locations_digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"seal of {self.markdown_id}"
