"""Who may call the API: anyone acting for an organization (key or member), with
a role that allows what the view does (core.roles)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core.roles import Action, role_allows
from core.tenancy import organization_of, role_of


class HasOrganization(BasePermission):
    """The caller is an API key or a signed-in member of some organization."""

    message = "Authentication credentials were not provided or have no organization."

    def has_permission(self, request: Request, view: Any) -> bool:
        return organization_of(request) is not None


def view_action(view: Any, method: str) -> Action | None:
    """The action a view's ``method`` takes, from its ``role_actions`` table
    (``{"GET": Action.READ_DOCUMENTS, …}``); None when the view states none."""
    actions = getattr(view, "role_actions", None) or {}
    if method == "HEAD":
        method = "GET"
    return actions.get(method) if method != "OPTIONS" else Action.ASK


class RoleAllows(BasePermission):
    """The caller's role allows the action of this method. A view that states no
    action for a method allows it to nobody: a new endpoint is closed until it
    has a rule."""

    message = "This role may not do that."

    def has_permission(self, request: Request, view: Any) -> bool:
        if not hasattr(view, (request.method or "").lower()):
            return True  # a method the view does not have: DRF answers 405 next
        action = view_action(view, request.method or "")
        role = role_of(request)
        if action is None or not role_allows(role, action):
            self.message = (
                f"the {role or 'anonymous'} role may not {_words(action)}"
                if action is not None
                else f"{request.method} is not allowed to any role here"
            )
            return False
        return True


_WORDS = {
    Action.ASK: "ask questions",
    Action.READ_DOCUMENTS: "read documents",
    Action.EDIT_DOCUMENTS: "upload, change or delete documents",
    Action.MANAGE_SOURCES: "manage data sources and apps",
    Action.AUDIT: "read every answer of the organization",
    Action.MANAGE_MEMBERS: "manage members and API keys",
}


def _words(action: Action) -> str:
    return _WORDS[action]
