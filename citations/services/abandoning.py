"""Failing an answer: its failure recorded and chained exactly once, and the sweep
that fails answers abandoned while running (their process or connection died)."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.ledger import ledger_append
from citations.models import QueryExecution, QueryStatus


class QueryAbandoned(Exception):
    """The answer was marked failed (abandoned) while it was being made: the work
    that finished late is dropped, the recorded failure stands."""


@transaction.atomic
def query_execution_fail(
    *, execution_id: UUID, reason: str, created_before: datetime | None = None
) -> bool:
    """``running`` → ``failed`` with ``reason``, chained; False if it was no longer
    running (completed, or failed by someone else first). The conditional UPDATE is
    the claim: of an answer finishing late and the sweeper, exactly one wins."""
    running = QueryExecution.objects.filter(pk=execution_id, status=QueryStatus.RUNNING)
    if created_before is not None:
        running = running.filter(created_at__lt=created_before)
    updated = running.update(
        status=QueryStatus.FAILED, error_message=reason[:2000], completed_at=timezone.now()
    )
    if updated:
        ledger_append([QueryExecution(pk=execution_id)])
    return bool(updated)


SWEEP_BATCH = 200  # stale answers failed per sweep; the next sweep takes the rest


def query_executions_sweep_stale(*, stale_seconds: int | None = None) -> list[str]:
    """Fail the answers still ``running`` after ``stale_seconds``: whatever was making
    them died (a killed connection, a restarted database or worker) before it could
    record anything. Each is failed and chained on its own; the ids failed."""
    if stale_seconds is None:
        stale_seconds = settings.PROVENANCE_QUERY_STALE_SECONDS
    cutoff = timezone.now() - timedelta(seconds=stale_seconds)
    stale = QueryExecution.objects.filter(status=QueryStatus.RUNNING, created_at__lt=cutoff)
    reason = (
        f"abandoned: still running {stale_seconds} s after it was asked (the process or "
        "database connection answering it stopped); marked failed by the stale-answer sweeper"
    )
    return [
        str(pk)
        for pk in stale.order_by("created_at").values_list("pk", flat=True)[:SWEEP_BATCH]
        if query_execution_fail(execution_id=pk, reason=reason, created_before=cutoff)
    ]
