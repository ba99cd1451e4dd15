"""Apps (``llm_app_id``), query executions (``query_id``) and the evidence of
each answer: every retrieval hit, the quoted sources behind its ``[n]``
markers, claim citations (answer span ↔ chunk span) and trace rows.

Evidence rows snapshot what they cite (file revision, chunk hash and text,
index hash, embed model) so later re-ingestion never changes a past answer.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from core.user_agents import MAX_USER_AGENT_CHARS


class Reasoning(models.TextChoices):
    """How an app works through a question: in one retrieval, or in steps."""

    SINGLE = "single", "Single step (one retrieval, one answer)"
    STEPS = "steps", "Steps (sub-questions, each with its own retrieval and sources)"


class ModelContract(models.TextChoices):
    """The form a Chat Completions model answers in (citations.generators.openai_contracts)."""

    AUTO = "auto", "Auto (nested, flat for a model that cannot keep it)"
    NESTED = "nested", "Nested (citations, then sentences citing them)"
    FLAT = "flat", "Flat (one object per sentence: text, snippet, quote)"


class ModelFallback(models.TextChoices):
    """What an app does when its model cannot give a verified answer."""

    EXTRACTIVE = "extractive", "Answer extractively, and say so"
    FAIL = "fail", "Fail the question (502/504)"


# an answer's model time limits stay below the stale-answer sweep (PROVENANCE_QUERY_STALE_SECONDS)
MAX_MODEL_SECONDS = 3600


class App(models.Model):
    """A question-answering configuration bound to data sources (the seeds' ``llm_app_id``)."""

    class Generator(models.TextChoices):
        EXTRACTIVE = "extractive", "Extractive (verbatim sentences, no LLM)"
        OPENAI = "openai", "OpenAI-compatible Chat Completions (JSON citation contract)"
        ANTHROPIC = "anthropic", "Anthropic Messages (document blocks with citations)"

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
        null=True,
        blank=True,
        default=None,
        help_text="Below this answer probability the extractive answer quotes nothing; "
        "empty: the answer scorer's fitted threshold.",
    )
    max_answer_sentences = models.PositiveSmallIntegerField(default=4)
    generator = models.CharField(
        max_length=40, choices=Generator.choices, default=Generator.EXTRACTIVE
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="The model of an LLM generator (e.g. gpt-4o-mini, claude-sonnet-4-5, llama3.1).",
    )
    prompt = models.TextField(
        "system prompt",
        blank=True,
        default="",
        help_text="Instructions for an LLM generator; the citation contract is always added.",
    )
    temperature = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(2.0)],
        help_text="Sampling temperature; empty = the provider's default.",
    )
    max_output_tokens = models.PositiveIntegerField(
        default=1024,
        validators=[MinValueValidator(1), MaxValueValidator(200_000)],
        help_text="The most tokens an LLM generator may write per answer.",
    )
    model_contract = models.CharField(
        max_length=10,
        choices=ModelContract.choices,
        default=ModelContract.AUTO,
        help_text="The form an OpenAI-compatible model answers in: auto starts nested and "
        "turns to flat for a model that cannot keep it (docs/generators.md).",
    )
    model_fallback = models.CharField(
        max_length=12,
        choices=ModelFallback.choices,
        default=ModelFallback.EXTRACTIVE,
        help_text="When the model errs, times out or no claim of its reply verifies: answer "
        "extractively (and say so), or fail the question.",
    )
    model_connect_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_MODEL_SECONDS)],
        help_text="Seconds to connect to the model's server; empty = the environment's.",
    )
    model_first_token_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_MODEL_SECONDS)],
        help_text="Seconds until the model's first token; empty = the environment's.",
    )
    model_timeout_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_MODEL_SECONDS)],
        help_text="Seconds for a whole model reply; empty = the environment's.",
    )
    reasoning = models.CharField(
        max_length=10,
        choices=Reasoning.choices,
        default=Reasoning.SINGLE,
        help_text="steps: a question that asks several things is answered step by step, "
        "each step with its own retrieval and sources (docs/steps.md).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="app_unique_name")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # a model generator cannot answer without a model: refuse the admin's save
        if self.generator != self.Generator.EXTRACTIVE and not self.model.strip():
            raise ValidationError({"model": f"the {self.generator} generator needs a model"})


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
    # the surface it was asked through: api, web, thread, response, cli, evaluation, …
    origin = models.CharField(max_length=30, default="api")
    # where the request came from (empty for a command, a task, an evaluation); the agent
    # is the client's own words, text to read (core/user_agents.py)
    caller_address = models.GenericIPAddressField(
        null=True, blank=True, help_text="The client's address, as the server saw it."
    )
    caller_user_agent = models.CharField(
        max_length=MAX_USER_AGENT_CHARS,
        blank=True,
        default="",
        help_text='The client\'s User-Agent header, or "manage.py <command>".',
    )
    retriever = models.CharField(max_length=60, default="hybrid-rrf")
    index_hash = models.CharField(max_length=64, blank=True, default="")
    embed_model = models.CharField(max_length=200, blank=True, default="")
    analyzer = models.CharField(max_length=50, blank=True, default="")
    validator_status = models.CharField(max_length=40, blank=True, default="")
    latency_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # how far the answer can be trusted, in plain language (citations/confidence.py);
    # empty on answers given before it was recorded
    generator = models.CharField(
        max_length=40,
        blank=True,
        default="",
        help_text="The generator that wrote the answer (extractive when a model's failed).",
    )
    fallback_reason = models.CharField(
        max_length=60,
        blank=True,
        default="",
        help_text="Why the app's model did not write the answer (model_contract, "
        "model_timeout, …), else empty.",
    )
    confidence = models.CharField(max_length=10, blank=True, default="")
    confidence_note = models.TextField(blank=True, default="")

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


class ModelCall(models.Model):
    """One request to a language model for an answer and its reply exactly as received
    (attempt 2 is the one retry asking the model to fix what verification refused).
    The prompt and the raw reply are stored whole and hashed, and the row is chained."""

    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="model_calls")
    attempt = models.PositiveSmallIntegerField()
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200, help_text="The model asked for.")
    response_model = models.CharField(max_length=200, blank=True, default="")
    base_url = models.CharField(max_length=500, blank=True, default="")
    prompt = models.JSONField(help_text="System prompt, messages and parameters as sent.")
    prompt_sha256 = models.CharField(max_length=64)
    response_id = models.CharField(max_length=200, blank=True, default="")
    raw_response = models.TextField(help_text="The HTTP body of the reply, as received.")
    response_sha256 = models.CharField(max_length=64)
    finish_reason = models.CharField(max_length=60, blank=True, default="")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField()
    transport_retries = models.PositiveSmallIntegerField(
        default=0, help_text="Retries after 429, 5xx or a timeout before this reply."
    )
    contract_codes = models.JSONField(
        default=list, blank=True, help_text="What this attempt's prompt asked the model to fix."
    )
    wire = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the server was asked with and what it refused (response_format, "
        "stream, …), and whether that was remembered from an earlier call.",
    )
    error = models.TextField(
        blank=True, default="", help_text="Why this call gave no reply to read, else empty."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query", "attempt"]
        constraints = [
            models.UniqueConstraint(fields=["query", "attempt"], name="model_call_unique_attempt")
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.model} #{self.attempt}"


class ClaimCheck(models.Model):
    """The verification of one citation of a model's reply sentence (or of a sentence
    that cites nothing): supported ones became a ``ClaimCitation`` and an ``[n]``;
    the others are kept, with the reason, and never numbered."""

    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="claim_checks")
    model_call = models.ForeignKey(ModelCall, on_delete=models.PROTECT, related_name="checks")
    claim = models.ForeignKey(
        ClaimCitation, null=True, blank=True, on_delete=models.PROTECT, related_name="checks"
    )
    hit = models.ForeignKey(
        RetrievalHit, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    sentence = models.PositiveIntegerField(help_text="The sentence's place in the reply, from 0.")
    reply_sentence = models.TextField()
    supported = models.BooleanField()
    reason = models.CharField(max_length=60, help_text="supported, or why not")
    citation_type = models.CharField(max_length=40, blank=True, default="")
    snippet_id = models.TextField(blank=True, default="", help_text="As the model gave it.")
    quote = models.TextField(blank=True, default="", help_text="As the model gave it.")
    document_index = models.IntegerField(null=True, blank=True)
    document_title = models.TextField(blank=True, default="")
    cited_block_index = models.IntegerField(null=True, blank=True)
    source_start = models.PositiveIntegerField(null=True, blank=True)
    source_end = models.PositiveIntegerField(null=True, blank=True)
    support_score = models.FloatField(null=True, blank=True)
    claimed = models.JSONField(default=dict, blank=True, help_text="The citation as given.")
    alignment = models.CharField(
        max_length=12,
        blank=True,
        default="",
        help_text="How the quote was found: exact, normalised, ellipsis or near.",
    )
    edit_distance = models.PositiveIntegerField(
        null=True, blank=True, help_text="Edits between a near quote and the span it stands for."
    )

    class Meta:
        ordering = ["query", "model_call", "sentence", "id"]

    def __str__(self) -> str:
        return f"{self.reason}: {self.reply_sentence[:70]}"


class ReasoningStep(models.Model):
    """One step of an answer worked through in steps (the cot-source-attribution
    document's ``ReasoningStep``): a sub-question, its own retrieval (the query's hits
    ``k_pos`` ``hits_from``..``hits_to``), its short answer with its own ``[n]`` and the
    sources it cites (``source_attributions``). The final answer joins the steps'
    claims, renumbered over every step in order of first use."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    query = models.ForeignKey(
        QueryExecution, on_delete=models.PROTECT, related_name="reasoning_steps"
    )
    step_number = models.PositiveSmallIntegerField()
    question = models.TextField()
    intermediate_answer = models.TextField(help_text="With the step's own [n] markers.")
    confidence_score = models.FloatField(help_text="0..1: how well its claims answer it.")
    reasoning_trace = models.TextField()
    execution_time = models.FloatField(help_text="Seconds spent retrieving and answering.")
    outcome = models.CharField(
        max_length=20, help_text="answered, unanswered (nothing cited) or no_hits."
    )
    proposed_by = models.CharField(
        max_length=20, help_text="question (its structure), model, or fallback (one step)."
    )
    search_text = models.TextField(help_text="What its retrieval searched for.")
    uses_steps = models.JSONField(
        default=list, blank=True, help_text="Earlier steps whose answers its retrieval used."
    )
    hits_from = models.PositiveIntegerField(null=True, blank=True)
    hits_to = models.PositiveIntegerField(null=True, blank=True)
    model_call_attempts = models.JSONField(
        default=list, blank=True, help_text="The query's model calls that answered this step."
    )
    context_used = models.JSONField(
        default=list, blank=True, help_text="Snippet ids of the passages it read (first 5)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["query", "step_number"]
        constraints = [
            models.UniqueConstraint(fields=["query", "step_number"], name="step_unique_number")
        ]

    def __str__(self) -> str:
        return f"step {self.step_number}: {self.question[:70]}"


class StepSourceAttribution(models.Model):
    """A source one step cites (the document's ``SourceAttribution``), frozen at
    query time: ``document_id`` is the document's id across revisions, ``chunk_index``
    the chunk's position, ``retrieval_rank`` its rank in the step's retrieval,
    ``relevance_score`` its ``score_norm`` times the step's confidence."""

    query = models.ForeignKey(
        QueryExecution, on_delete=models.PROTECT, related_name="step_attributions"
    )
    step = models.ForeignKey(
        ReasoningStep, on_delete=models.PROTECT, related_name="source_attributions"
    )
    quoted_as = models.CharField(max_length=10, help_text="Its [n] in the step's answer.")
    final_source = models.ForeignKey(
        QuotedSource,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="step_attributions",
        help_text="Its [n] in the final answer.",
    )
    hit = models.ForeignKey(RetrievalHit, on_delete=models.PROTECT, related_name="+")
    chunk = models.ForeignKey("documents.Chunk", on_delete=models.PROTECT, related_name="+")
    file = models.ForeignKey("documents.File", on_delete=models.PROTECT, related_name="+")
    file_revision = models.PositiveIntegerField()
    chunk_hash = models.CharField(max_length=64)
    document_id = models.CharField(max_length=64)
    document_title = models.CharField(max_length=255)
    relevance_score = models.FloatField()
    score_norm = models.FloatField(help_text="The hit's score before the confidence.")
    excerpt = models.CharField(max_length=200)
    chunk_index = models.PositiveIntegerField()
    retrieval_rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["query", "step", "id"]
        constraints = [
            models.UniqueConstraint(fields=["step", "quoted_as"], name="step_quoted_as_unique")
        ]

    def __str__(self) -> str:
        return f"step [{self.quoted_as}] {self.document_title}"


class StepClaim(models.Model):
    """``step.intermediate_answer[reply_start:reply_end]`` is supported by
    ``chunk_text[source_start:source_end]`` of the attribution's chunk; ``claim`` is
    the same sentence in the final answer."""

    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="step_claims")
    step = models.ForeignKey(ReasoningStep, on_delete=models.PROTECT, related_name="claims")
    attribution = models.ForeignKey(
        StepSourceAttribution, on_delete=models.PROTECT, related_name="claims"
    )
    claim = models.ForeignKey(
        ClaimCitation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    segment = models.PositiveIntegerField()
    reply_sentence = models.TextField()
    reply_start = models.PositiveIntegerField()
    reply_end = models.PositiveIntegerField()
    source_sentence = models.TextField()
    source_start = models.PositiveIntegerField()
    source_end = models.PositiveIntegerField()
    relevance = models.FloatField()

    class Meta:
        ordering = ["query", "step", "segment"]

    def __str__(self) -> str:
        return self.reply_sentence[:80]


class RagTrace(models.Model):
    """The retrieval-traceability document's trace table, one row per question and segment."""

    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="traces")
    ts = models.DateTimeField()
    qid = models.TextField()
    seg = models.IntegerField()
    deltaS = models.FloatField(db_column="deltas")  # the documented column name
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
    # who owns it (core.permissions.Reader): the key that made it, else the member
    caller_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    caller_api_key = models.ForeignKey(
        "documents.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # deleting only hides it; the deletion itself is ConversationDeletion evidence
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=200, blank=True, default="")

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
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=200, blank=True, default="")

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
    # where the run was asked from, handed to its query execution when the worker runs it
    caller_address = models.GenericIPAddressField(null=True, blank=True)
    caller_user_agent = models.CharField(max_length=MAX_USER_AGENT_CHARS, blank=True, default="")
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


class ResponseStatus(models.TextChoices):
    """in_progress → completed | failed (``/v1/responses`` answers in the request)."""

    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


class ResponseRecord(models.Model):
    """One answer of the Responses API (``POST /v1/responses``): the app it asked
    (``model``), the input as given, the turn it follows (``previous_response_id``)
    and the query execution holding its evidence. Deleting it only hides it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="responses"
    )
    app = models.ForeignKey(App, on_delete=models.PROTECT, related_name="responses")
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="follow_ups"
    )
    question = models.TextField(help_text="The latest user message: what was answered.")
    input = models.JSONField(default=list, help_text="The input messages, as given.")
    instructions = models.TextField(blank=True, default="")
    tools = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=20,
        choices=ResponseStatus.choices,
        default=ResponseStatus.IN_PROGRESS,
        db_index=True,
    )
    query = models.ForeignKey(
        QueryExecution, null=True, blank=True, on_delete=models.PROTECT, related_name="responses"
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
    completed_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"response {self.pk} ({self.status})"


class FeedbackRating(models.TextChoices):
    HELPFUL = "helpful", "Helpful"
    NOT_HELPFUL = "not_helpful", "Not helpful"


class AnswerFeedback(models.Model):
    """A reader's verdict on one answer, with an optional comment. Evidence like the
    answer itself: written once, never changed (append-only trigger) and chained in
    the audit ledger; a reader who changes their mind adds a row, the latest counts."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    query = models.ForeignKey(QueryExecution, on_delete=models.PROTECT, related_name="feedback")
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="+"
    )
    rating = models.CharField(max_length=20, choices=FeedbackRating.choices)
    comment = models.TextField(blank=True, default="")
    # as on QueryExecution: deleting a user must not touch evidence
    caller_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    caller = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["query", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on {self.query_id}"


class ConversationDeletion(models.Model):
    """A thread, a message or a response hidden from the API: what, who (user or key,
    as recorded at the time), when, from where and why. Evidence: written once,
    never changed (append-only trigger) and chained in the audit ledger; the record
    it names stays, marked ``deleted_at``."""

    class Kind(models.TextChoices):
        THREAD = "thread"
        MESSAGE = "message"
        RESPONSE = "response"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    record_id = models.UUIDField(db_index=True, help_text="The thread, message or response.")
    thread_id = models.UUIDField(null=True, blank=True, help_text="A message's thread.")
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="+"
    )
    actor = models.CharField(max_length=200, help_text="Who, as recorded at the time.")
    # plain ids, no constraint: deleting the user or key must not touch evidence
    actor_user_id = models.IntegerField(null=True, blank=True)
    actor_api_key_id = models.BigIntegerField(null=True, blank=True)
    role = models.CharField(max_length=20, help_text="The role the actor acted with.")
    origin = models.GenericIPAddressField(
        null=True, blank=True, help_text="The client's address, as the server saw it."
    )
    user_agent = models.CharField(max_length=MAX_USER_AGENT_CHARS, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.record_id} deleted by {self.actor}"
