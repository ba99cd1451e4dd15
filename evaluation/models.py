"""Evaluation runs: an app measured on a gold set (the retrieval-traceability
document's evaluation recipe), and every question it asked.

All three tables are evidence: append-only in the database (see this app's
migrations) and in the hash chain. A run is written whole before the work, each
item when its question is answered, and the outcome once at the end, so no row
is ever updated: the run's status and progress are read from what was appended.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class RunStatus(models.TextChoices):
    """queued (no item yet) → running (items appended) → completed | failed
    (the outcome row). Derived from the rows, never stored on the run."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class EvaluationRun(models.Model):
    """What was asked for: an app, a gold set (its name, sha256 and parsed items), the
    app's settings at the start, who started it and from where."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="+"
    )
    app = models.ForeignKey(
        "citations.App", on_delete=models.PROTECT, related_name="evaluation_runs"
    )
    gold_name = models.CharField(max_length=255)
    gold_sha256 = models.CharField(max_length=64)
    gold_items = models.JSONField(help_text="The gold set's items as parsed, with line numbers.")
    warnings = models.JSONField(default=list, blank=True)
    app_settings = models.JSONField(help_text="The app's retrieval and generator settings.")
    seeds = models.PositiveSmallIntegerField(default=1)
    total = models.PositiveIntegerField(help_text="Questions to ask (paraphrases and seeds).")
    # no database constraint: deleting a user must not touch evidence
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    started_by_label = models.CharField(max_length=200, help_text="Who, as recorded at the time.")
    origin = models.CharField(max_length=20, default="command")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("start_evaluation", "Can start an evaluation run")]

    def __str__(self) -> str:
        return f"{self.gold_name} on {self.app_id} ({self.created_at:%Y-%m-%d %H:%M})"


class Verdict(models.TextChoices):
    """How one question fared; the order is the report's "worst first" order."""

    FAILED = "failed", "the answer path failed"
    UNMATCHED = "unmatched", "expected document not in the app's data sources"
    ANSWERED_UNANSWERABLE = "answered_unanswerable", "cited sources for an unanswerable question"
    FALSE_ABSTENTION = "false_abstention", "cited nothing for an answerable question"
    WRONG_SOURCE = "wrong_source", "no cited snippet in the expected place"
    MISSED_ANSWER = "missed_answer", "expected answer in no quoted source"
    ABSTAINED = "abstained", "cited nothing for an unanswerable question"
    PASS = "pass", "cited the expected place and quoted the answer"


class EvaluationItem(models.Model):
    """One question (or paraphrase, for one seed) asked, its query execution, and what
    the evaluation read from that evidence."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.PROTECT, related_name="items")
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="+"
    )
    position = models.PositiveIntegerField(help_text="1-based place in the run.")
    line = models.PositiveIntegerField(help_text="The gold set's line.")
    seed = models.PositiveSmallIntegerField()
    variant = models.PositiveSmallIntegerField(help_text="0: the question; n: paraphrase n.")
    question = models.TextField()
    expected = models.JSONField(default=dict, blank=True)
    answerable = models.BooleanField(default=True)
    query = models.ForeignKey(
        "citations.QueryExecution",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    answer = models.TextField(blank=True, default="")
    cited = models.JSONField(default=list, blank=True, help_text="Cited snippets, [n] order.")
    hit_ids = models.JSONField(default=list, blank=True, help_text="Retrieved snippets, k order.")
    first_correct_rank = models.PositiveIntegerField(null=True, blank=True)
    matched_citations = models.PositiveIntegerField(default=0)
    source_coverage = models.BooleanField(null=True, blank=True)
    answer_coverage = models.BooleanField(null=True, blank=True)
    delta_s = models.FloatField(null=True, blank=True, help_text="ΔS(question, retrieved).")
    validator_status = models.CharField(max_length=40, blank=True, default="")
    latency_ms = models.FloatField(null=True, blank=True)
    verdict = models.CharField(max_length=30, choices=Verdict.choices)
    error_message = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="evaluation_item_unique")
        ]

    def __str__(self) -> str:
        return f"#{self.position} {self.verdict}: {self.question[:60]}"


class EvaluationOutcome(models.Model):
    """How a run ended: completed with its figures, or failed and why. One per run."""

    run = models.OneToOneField(EvaluationRun, on_delete=models.PROTECT, related_name="outcome")
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=20, choices=RunStatus.choices)
    figures = models.JSONField(default=dict, blank=True)
    error_message = models.TextField(blank=True, default="")
    finished_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.status} {self.run_id}"
