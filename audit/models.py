"""The tamper-evident audit trail: a hash chain over every evidence record, and
document lifecycle events (upload, revision, deletion, download, reconversion).

Both tables are append-only in the database itself (see the triggers in this
app's migrations); the chain makes any edit that bypasses that visible.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.user_agents import MAX_USER_AGENT_CHARS


class EvidenceEntry(models.Model):
    """One link: ``entry_hash = HMAC-SHA256(key, prev_hash | table | id | content_hash)``.

    ``key_id`` is the fingerprint of the key (audit/keys.py); empty for entries made
    before the chain was keyed, whose ``entry_hash`` is the plain SHA-256 of the same.
    """

    seq = models.BigAutoField(primary_key=True)
    record_table = models.CharField(max_length=100)
    record_id = models.CharField(max_length=64)
    organization_id = models.UUIDField(null=True, db_index=True)
    content_hash = models.CharField(max_length=64)
    prev_hash = models.CharField(max_length=64)
    entry_hash = models.CharField(max_length=64, unique=True)
    key_id = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["seq"]
        verbose_name_plural = "evidence entries"
        indexes = [models.Index(fields=["record_table", "record_id"], name="entry_record")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.record_table}:{self.record_id}"


class DocumentEvent(models.Model):
    """Something that happened to a document, with who, when, from where and why."""

    class Kind(models.TextChoices):
        UPLOAD = "upload"
        REVISION = "revision"
        DELETION = "deletion"
        DOWNLOAD = "download"
        RECONVERSION = "reconversion"
        CANCELLATION = "cancellation"
        RETRY = "retry"
        # the stored original no longer hashes to its recorded sha256 (documents/originals.py)
        INTEGRITY = "integrity"

    kind = models.CharField(max_length=20, choices=Kind.choices, db_index=True)
    file = models.ForeignKey("documents.File", on_delete=models.PROTECT, related_name="events")
    organization = models.ForeignKey(
        "documents.Organization", on_delete=models.PROTECT, related_name="+"
    )
    actor = models.CharField(max_length=200, help_text="Who, as recorded at the time.")
    actor_user_id = models.IntegerField(null=True, blank=True)
    origin = models.GenericIPAddressField(
        null=True, blank=True, help_text="The client's address; empty for a command or a task."
    )
    # the client's own words (a header anyone can write): text to read, never to trust;
    # empty for events recorded before it was, and for tasks
    user_agent = models.CharField(
        max_length=MAX_USER_AGENT_CHARS,
        blank=True,
        default="",
        help_text='The client\'s User-Agent header, or "manage.py <command>".',
    )
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} of {self.file_id} by {self.actor}"


class OriginalsCheck(models.Model):
    """One sweep re-hashing every stored original against its recorded sha256: how
    many were checked and which differ or could not be read (evidence, chained)."""

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(db_index=True)
    checked = models.PositiveIntegerField()
    altered = models.JSONField(default=list, help_text="[{file, recorded, actual}]")
    missing = models.JSONField(default=list, help_text="[{file, error}]")

    class Meta:
        ordering = ["-finished_at"]

    def __str__(self) -> str:
        problems = len(self.altered) + len(self.missing)
        return f"originals check of {self.finished_at:%Y-%m-%d %H:%M}: {problems} problem(s)"
