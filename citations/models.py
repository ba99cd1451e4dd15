"""Apps (``llm_app_id``), query executions (``query_id``) and the evidence of
each answer: every retrieval hit, the quoted sources behind its ``[n]``
markers, claim citations (answer span ↔ chunk span) and trace rows.

Evidence rows snapshot what they cite (file revision, chunk hash and text,
index hash, embed model) so later re-ingestion never changes a past answer.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class App(models.Model):
    """A question-answering configuration bound to data sources (the seeds' ``llm_app_id``)."""

    class Generator(models.TextChoices):
        EXTRACTIVE = "extractive", "Extractive (verbatim sentences, no LLM)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="apps"
    )
    name = models.CharField(max_length=200)
    data_sources = models.ManyToManyField("documents.DataSource", related_name="apps")
    is_public = models.BooleanField(default=False, help_text="Public apps need no API key.")
    top_k = models.PositiveSmallIntegerField(default=10, help_text="Hits kept after fusion.")
    candidate_k = models.PositiveSmallIntegerField(
        default=40, help_text="Candidates per retriever (semantic and full-text) before fusion."
    )
    min_score = models.FloatField(
        default=0.0, help_text="Hits whose score_norm is below this are dropped."
    )
    answer_threshold = models.FloatField(
        default=0.35, help_text="Below this sentence relevance the answer says it found nothing."
    )
    max_answer_sentences = models.PositiveSmallIntegerField(default=4)
    generator = models.CharField(
        max_length=40, choices=Generator.choices, default=Generator.EXTRACTIVE
    )
    prompt = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="app_unique_name")
        ]

    def __str__(self) -> str:
        return self.name


class QueryStatus(models.TextChoices):
    """running → completed | failed."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class QueryExecution(models.Model):
    """One question asked of an app, and the answer given (the seeds' ``query_id``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    app = models.ForeignKey(App, on_delete=models.PROTECT, related_name="query_executions")
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="query_executions"
    )
    question = models.TextField()
    answer = models.TextField(blank=True, default="")
    status = models.CharField(
        max_length=20, choices=QueryStatus.choices, default=QueryStatus.RUNNING
    )
    error_message = models.TextField(blank=True, default="")
    # no database constraint and no cascade: deleting a user or key must not touch evidence
    caller_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="query_executions",
    )
    caller_api_key = models.ForeignKey(
        "documents.ApiKey",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    caller = models.CharField(
        max_length=200, blank=True, default="", help_text="Who asked, as recorded at the time."
    )
    origin = models.CharField(max_length=30, default="api")
    retriever = models.CharField(max_length=60, default="hybrid-rrf")
    index_hash = models.CharField(max_length=64, blank=True, default="")
    embed_model = models.CharField(max_length=200, blank=True, default="")
    analyzer = models.CharField(max_length=50, blank=True, default="")
    validator_status = models.CharField(max_length=40, blank=True, default="")
    latency_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.question[:80]


class RetrievalHit(models.Model):
    """Every unit the retriever returned for a query, with its scores and ranks."""

    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="hits")
    chunk = models.ForeignKey("documents.Chunk", on_delete=models.PROTECT, related_name="+")
    file = models.ForeignKey("documents.File", on_delete=models.PROTECT, related_name="+")
    file_revision = models.PositiveIntegerField()
    chunk_hash = models.CharField(max_length=64)
    section = models.TextField(blank=True, default="")
    retriever_type = models.CharField(max_length=30)
    score_raw = models.FloatField()
    score_norm = models.FloatField()
    rerank_score = models.FloatField(null=True, blank=True)
    semantic_rank = models.PositiveIntegerField(null=True, blank=True)
    lexical_rank = models.PositiveIntegerField(null=True, blank=True)
    k_pos = models.PositiveIntegerField()
    k_final = models.PositiveIntegerField(null=True, blank=True)
    payload = models.JSONField(help_text="The citation payload as issued at query time.")

    class Meta:
        ordering = ["query", "k_pos"]
        constraints = [models.UniqueConstraint(fields=["query", "k_pos"], name="hit_unique_rank")]

    def __str__(self) -> str:
        return f"#{self.k_pos} {self.section}"


class QuotedSource(models.Model):
    """A source the answer cites as ``[quoted_as]``; its text is frozen at query time."""

    query = models.ForeignKey(
        QueryExecution, on_delete=models.PROTECT, related_name="quoted_sources"
    )
    quoted_as = models.CharField(max_length=10)
    hit = models.ForeignKey(RetrievalHit, on_delete=models.PROTECT, related_name="+")
    chunk = models.ForeignKey("documents.Chunk", on_delete=models.PROTECT, related_name="+")
    file = models.ForeignKey("documents.File", on_delete=models.PROTECT, related_name="+")
    file_revision = models.PositiveIntegerField()
    file_sha256 = models.CharField(max_length=64)
    document_name = models.CharField(max_length=255)
    data_source_id = models.UUIDField()
    data_source_name = models.CharField(max_length=200)
    chunk_hash = models.CharField(max_length=64)
    chunk_text = models.TextField()
    chunk_position = models.PositiveIntegerField()
    section = models.TextField(blank=True, default="")
    page_start = models.PositiveIntegerField(null=True, blank=True)
    page_end = models.PositiveIntegerField(null=True, blank=True)
    line_number_start = models.PositiveIntegerField()
    line_number_end = models.PositiveIntegerField()
    score = models.FloatField()
    retriever_type = models.CharField(max_length=30)

    class Meta:
        ordering = ["query", "id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "quoted_as"], name="quoted_as_unique")
        ]

    def __str__(self) -> str:
        return f"[{self.quoted_as}] {self.document_name}"


class ClaimCitation(models.Model):
    """``answer[reply_start:reply_end]`` is supported by ``chunk_text[source_start:source_end]``."""

    query = models.ForeignKey(
        QueryExecution, on_delete=models.PROTECT, related_name="claim_citations"
    )
    quoted_source = models.ForeignKey(QuotedSource, on_delete=models.PROTECT, related_name="claims")
    segment = models.PositiveIntegerField()
    reply_sentence = models.TextField()
    reply_start = models.PositiveIntegerField()
    reply_end = models.PositiveIntegerField()
    source_sentence = models.TextField()
    source_start = models.PositiveIntegerField()
    source_end = models.PositiveIntegerField()
    relevance = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query", "segment"]

    def __str__(self) -> str:
        return self.reply_sentence[:80]


class RagTrace(models.Model):
    """The retrieval-traceability document's trace table, one row per question and segment."""

    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="traces")
    ts = models.DateTimeField()
    qid = models.TextField()
    seg = models.IntegerField()
    deltaS = models.FloatField(db_column="deltas")  # noqa: N815 - the documented column name
    lambda_state = models.TextField()
    store = models.TextField(null=True)  # noqa: DJ001 - nullable as documented
    index_hash = models.TextField(null=True)  # noqa: DJ001 - nullable as documented
    embed_model = models.TextField(null=True)  # noqa: DJ001 - nullable as documented
    analyzer = models.TextField(null=True)  # noqa: DJ001 - nullable as documented
    section_id = models.TextField(null=True)  # noqa: DJ001 - nullable as documented
    rev = models.TextField(null=True)  # noqa: DJ001 - nullable as documented
    citations = models.JSONField(null=True)
    scores = models.JSONField(null=True)
    kpos = models.JSONField(null=True)
    kfinal = models.JSONField(null=True)
    line = models.TextField(help_text="The grep-friendly log line, as logged.")

    class Meta:
        db_table = "rag_traces"
        ordering = ["query", "seg"]

    def __str__(self) -> str:
        return self.line[:80]


class Thread(models.Model):
    """A conversation of one organization (the Assistants API's ``thread``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="threads"
    )
    metadata = models.JSONField(default=dict, blank=True)
    caller = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"thread {self.pk}"


class MessageRole(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"


class Message(models.Model):
    """One turn of a thread. An assistant message written by a run points at the
    query execution that holds its evidence; ``annotations`` and ``sources`` are
    the citations and source-tracing fields as issued when the run completed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.PROTECT, related_name="messages")
    role = models.CharField(max_length=20, choices=MessageRole.choices)
    content = models.TextField()
    annotations = models.JSONField(default=list, blank=True)
    sources = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    app = models.ForeignKey(App, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(
        "Run", null=True, blank=True, on_delete=models.PROTECT, related_name="messages"
    )
    query = models.ForeignKey(
        QueryExecution, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["thread", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:80]}"


class RunStatus(models.TextChoices):
    """queued → in_progress → completed | failed; queued → cancelled;
    in_progress → cancelling → cancelled (the worker finishes, the answer is
    recorded for audit but not posted to the thread)."""

    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    FAILED = "failed"
    COMPLETED = "completed"


class Run(models.Model):
    """One answer of an app (``assistant_id``) to the latest user message of a thread."""

    ACTIVE = (RunStatus.QUEUED, RunStatus.IN_PROGRESS, RunStatus.CANCELLING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.PROTECT, related_name="runs")
    app = models.ForeignKey(App, on_delete=models.PROTECT, related_name="runs")
    question = models.ForeignKey(Message, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    instructions = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    query = models.ForeignKey(
        QueryExecution, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    caller_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    caller_api_key = models.ForeignKey(
        "documents.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    error_code = models.CharField(max_length=40, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["thread", "created_at", "id"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"
