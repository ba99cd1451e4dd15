"""Roles: the one definition of who may do what, read by every surface.

A member of an organization and an API key each carry one role. Web pages, the
REST API and the admin all ask :func:`role_allows` (the admin through
:data:`ADMIN_PERMISSIONS`, which turns actions into Django permissions), so a
rule changes here or nowhere.
"""

from __future__ import annotations

from enum import StrEnum

from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer — asks and reads"
    EDITOR = "editor", "Editor — also uploads, deletes, manages data sources and apps"
    OFFICER = "officer", "Compliance officer — reads every answer and its evidence"
    ADMIN = "admin", "Administrator — everything, and members and keys"


class Action(StrEnum):
    """What a caller does, in the words the rules are written in."""

    ASK = "ask"  # ask questions, read one's own answers and the passages they cite
    READ_DOCUMENTS = "read_documents"  # the library, a document's pages, downloads, chunks
    EDIT_DOCUMENTS = "edit_documents"  # upload, retry, cancel, reconvert, delete with a reason
    MANAGE_SOURCES = "manage_sources"  # data sources and apps
    AUDIT = "audit"  # every answer of the organization and its evidence, exports
    MANAGE_MEMBERS = "manage_members"  # members, their roles, API keys


_READER = frozenset({Action.ASK, Action.READ_DOCUMENTS})
GRANTS: dict[str, frozenset[Action]] = {
    Role.VIEWER: _READER,
    Role.EDITOR: _READER | {Action.EDIT_DOCUMENTS, Action.MANAGE_SOURCES},
    Role.OFFICER: _READER | {Action.AUDIT},
    Role.ADMIN: frozenset(Action),
}


def role_allows(role: str | None, action: Action) -> bool:
    """Whether ``role`` may take ``action`` (no role, or an unknown one, may do nothing)."""
    return action in GRANTS.get(role or "", frozenset())


def role_may_grant(granter: str | None, role: str) -> bool:
    """Whether a caller acting as ``granter`` may give ``role`` (to a key or a
    member): it manages members, and ``role`` allows nothing it may not do itself."""
    if role not in GRANTS or not role_allows(granter, Action.MANAGE_MEMBERS):
        return False
    return GRANTS[role] <= GRANTS[granter or ""]


def roles_allowing(action: Action) -> list[str]:
    """The roles that may take ``action``, in words (for a refusal a person reads)."""
    allowed = [role for role, actions in GRANTS.items() if action in actions]
    return [str(Role(role).label).split(" —")[0] for role in allowed]


def _model_permissions(label: str, *verbs: str) -> frozenset[str]:
    app, model = label.split(".")
    return frozenset(f"{app}.{verb}_{model}" for verb in verbs)


_ALL_VERBS = ("view", "add", "change", "delete")
AUDITED_APPS = ("documents", "retrieval", "citations", "audit", "evaluation")
# the one action officers take in the admin: measuring their apps (evaluation/admin.py)
AUDIT_ACTIONS = frozenset({"evaluation.start_evaluation"})

# the admin's Django permissions each action brings; ``Action.AUDIT`` is every
# ``view_*`` of the audited apps (core.role_backend expands it)
ADMIN_PERMISSIONS: dict[Action, frozenset[str]] = {
    Action.ASK: frozenset(),
    Action.READ_DOCUMENTS: frozenset(),
    Action.EDIT_DOCUMENTS: _model_permissions("documents.file", "view", "reingest"),
    Action.MANAGE_SOURCES: (
        _model_permissions("documents.datasource", *_ALL_VERBS)
        | _model_permissions("citations.app", *_ALL_VERBS)
        | _model_permissions("retrieval.vectordatabase", "view")
    ),
    Action.AUDIT: AUDIT_ACTIONS,
    Action.MANAGE_MEMBERS: (
        _model_permissions("documents.organization", "view", "change")
        | _model_permissions("documents.organizationmember", *_ALL_VERBS)
        | _model_permissions("documents.apikey", "view", "change", "delete")
    ),
}

# roles that reach the admin at all (``is_staff`` follows them, core.membership)
ADMIN_SITE_ROLES = frozenset(
    role for role, actions in GRANTS.items() if any(ADMIN_PERMISSIONS[a] for a in actions)
)
