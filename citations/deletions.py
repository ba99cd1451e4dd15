"""Deleting a thread, a message or a response: the record is marked, never erased,
and the deletion itself is chained evidence (who, with which role, when, from
where and why), so hiding a colleague's answer can always be traced.

The roles that may delete are core.roles' (``Action.DELETE_CONVERSATIONS``); the
views check them before calling here."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from audit.ledger import ledger_append
from citations.models import ConversationDeletion
from citations.threads.errors import ThreadRejected
from core.caller import Caller
from core.user_agents import user_agent_clean

MAX_REASON_CHARS = 2000


def deletion_reason(body: object) -> str:
    """The optional ``reason`` of a DELETE's JSON body ("" without one): OpenAI's
    clients send no body, so a reason cannot be required of them."""
    if not body:
        return ""
    if not isinstance(body, Mapping):
        raise ThreadRejected("the body must be a JSON object", code="invalid_body")
    reason = body.get("reason")
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise ThreadRejected("reason must be a string", code="invalid_reason", param="reason")
    if len(reason) > MAX_REASON_CHARS:
        raise ThreadRejected(
            f"reason is longer than {MAX_REASON_CHARS} characters",
            code="reason_too_long",
            param="reason",
        )
    return reason.strip()


@transaction.atomic
def conversation_delete(
    *,
    record: models.Model,
    kind: str,
    caller: Caller,
    role: str | None,
    reason: str = "",
    thread_id: uuid.UUID | None = None,
) -> ConversationDeletion:
    """Mark ``record`` (a Thread, Message or ResponseRecord) deleted by ``caller`` and
    chain the deletion. A record deleted meanwhile (by a concurrent request) is not
    found: the conditional UPDATE claims the deletion once."""
    now = timezone.now()
    marked = (
        type(record)
        ._default_manager.filter(pk=record.pk, deleted_at__isnull=True)
        .update(deleted_at=now, deleted_by=caller.label)
    )
    if not marked:
        raise ThreadRejected(
            f"No {kind} found with id '{record.pk}'.", code="not_found", status=404
        )
    event = ConversationDeletion.objects.create(
        kind=kind,
        record_id=record.pk,
        thread_id=thread_id,
        organization=caller.member_organization,
        actor=caller.label,
        actor_user_id=_pk(caller.user),
        actor_api_key_id=_pk(caller.api_key),
        role=role or "",
        origin=caller.origin,
        user_agent=user_agent_clean(caller.user_agent),
        reason=reason,
        created_at=now,
    )
    ledger_append([event])
    return event


def _pk(record: Any) -> Any:
    return getattr(record, "pk", None) if record is not None else None
