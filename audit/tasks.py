"""Beat's audit task: export the signed chain head (audit/heads.py)."""

from __future__ import annotations

from celery import shared_task

from audit.heads import audit_head_export


@shared_task(acks_late=True)
def export_audit_head() -> str | None:
    return audit_head_export()
