"""Recording what happens to documents, as chained evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from audit.ledger import ledger_append
from audit.models import DocumentEvent
from core.caller import caller_label
from core.user_agents import user_agent_clean

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from documents.models import ApiKey, File


def actor_label(user: AbstractBaseUser | None = None, api_key: ApiKey | None = None) -> str:
    """Who acted on a document: the caller's label, "system" when nobody did (a
    command, a task)."""
    return caller_label(user=user, api_key=api_key, nobody="system")


@transaction.atomic
def document_event_record(
    *,
    kind: str,
    file: File,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    user_agent: str | None = None,
    reason: str = "",
) -> DocumentEvent:
    """Record and chain ``kind`` of ``file`` by ``user`` or ``api_key``, from the
    client address ``origin`` with its ``user_agent`` (a command's own name, e.g.
    "manage.py ingest", with no address; nothing for a task)."""
    event = DocumentEvent.objects.create(
        kind=kind,
        file=file,
        organization_id=file.organization_id,
        actor=actor_label(user, api_key),
        actor_user_id=user.pk
        if user is not None and getattr(user, "is_authenticated", False)
        else None,
        origin=origin or None,
        user_agent=user_agent_clean(user_agent),
        reason=reason,
    )
    ledger_append([event])
    return event
