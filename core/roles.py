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
    # hide a response, delete a thread or one of its messages: marked, recorded with who,
    # when, from where and why (citations/deletions.py), never erased
    DELETE_CONVERSATIONS = "delete_conversations"


class Reach(StrEnum):
    """Whose records an operation that names one reaches (a view's ``role_reach``).

    Documents, data sources, apps and keys belong to the organization; answers,
    threads and responses belong to whoever asked them (a key, or a signed-in member).
    A record out of reach is not found (404), so its existence is not told either.
    """

    ORGANIZATION = "organization"  # any record of the caller's organization
    READ = "read"  # the caller's own; every one of the organization for a role with AUDIT
    OWN = "own"  # the caller's own only: posting into a thread, a follow-up, feedback


_READER = frozenset({Action.ASK, Action.READ_DOCUMENTS})
GRANTS: dict[str, frozenset[Action]] = {
    Role.VIEWER: _READER,
    Role.EDITOR: _READER
    | {Action.EDIT_DOCUMENTS, Action.MANAGE_SOURCES, Action.DELETE_CONVERSATIONS},
    Role.OFFICER: _READER | {Action.AUDIT},
    Role.ADMIN: frozenset(Action),
}


def role_allows(role: str | None, action: Action) -> bool:
    """Whether ``role`` may take ``action`` (no role, or an unknown one, may do nothing)."""
    return action in GRANTS.get(role or "", frozenset())


def role_reaches(role: str | None, reach: Reach, *, own: bool) -> bool:
    """Whether ``role`` reaches a record of its organization under ``reach``; ``own``
    says the caller asked it (the same key, or the same signed-in member)."""
    if reach == Reach.ORGANIZATION:
        return True
    return own or (reach == Reach.READ and role_allows(role, Action.AUDIT))


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
    # conversations are deleted through the API only; the admin shows the deletions
    # to those who AUDIT, read-only
    Action.DELETE_CONVERSATIONS: frozenset(),
}

# roles that reach the admin at all (``is_staff`` follows them, core.membership)
ADMIN_SITE_ROLES = frozenset(
    role for role, actions in GRANTS.items() if any(ADMIN_PERMISSIONS[a] for a in actions)
)
