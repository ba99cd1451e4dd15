"""Recording what happens to documents, as chained evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from audit.ledger import ledger_append
from audit.models import DocumentEvent

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.http import HttpRequest

    from documents.models import ApiKey, File


def actor_label(user: AbstractBaseUser | None = None, api_key: ApiKey | None = None) -> str:
    """Who acted, in words that stay meaningful after the account is gone."""
    if api_key is not None:
        return f"api-key:{api_key.prefix}"
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.get_username()}"
    return "system"


@transaction.atomic
def document_event_record(
    *,
    kind: str,
    file: File,
    user: AbstractBaseUser | None = None,
    api_key: ApiKey | None = None,
    origin: str | None = None,
    reason: str = "",
) -> DocumentEvent:
    event = DocumentEvent.objects.create(
        kind=kind,
        file=file,
        organization_id=file.organization_id,
        actor=actor_label(user, api_key),
        actor_user_id=user.pk
        if user is not None and getattr(user, "is_authenticated", False)
        else None,
        origin=origin or None,
        reason=reason,
    )
    ledger_append([event])
    return event


def client_address(request: HttpRequest) -> str | None:
    """The caller's address as the server saw it (proxies are the operator's to configure)."""
    return request.META.get("REMOTE_ADDR") or None
