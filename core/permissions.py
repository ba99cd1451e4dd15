"""Who may call the API: anyone acting for an organization (key or member), with
a role that allows what the view does (core.roles), on records within its reach."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core.authentication import api_key_of
from core.roles import Action, Reach, role_allows, role_reaches
from core.tenancy import membership_of, organization_of, role_of

if TYPE_CHECKING:
    from django.http import HttpRequest


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


def view_reach(view: Any, method: str) -> Reach:
    """Whose records ``method`` of a view reaches, from its ``role_reach`` table
    (``{"GET": Reach.READ, …}``); the organization's when the view states none."""
    reaches = getattr(view, "role_reach", None) or {}
    return reaches.get("GET" if method == "HEAD" else method, Reach.ORGANIZATION)


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


class RoleAllowsAnyCaller(RoleAllows):
    """``RoleAllows`` for a caller with a role; a caller without any (no key, no
    sign-in) passes to the view, which decides (a public app answers anyone)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return role_of(request) is None or super().has_permission(request, view)


@dataclass(frozen=True)
class Reader:
    """Who a request acts as for the records askers own (answers, threads,
    responses): its API key, else its signed-in member, and the role it carries.

    A key owns what it asked and a member what they asked signed in; nothing is
    owned by nobody. ``reachable`` applies ``core.roles.role_reaches`` to a query."""

    user_id: int | None
    api_key_id: int | None
    role: str | None

    @classmethod
    def of(cls, request: HttpRequest | Request) -> Reader:
        key = api_key_of(request)
        if key is not None:
            return cls(user_id=None, api_key_id=key.pk, role=key.role)
        membership = membership_of(request)
        if membership is None:
            return cls.nobody()
        return cls(user_id=membership.user_id, api_key_id=None, role=membership.role)

    @classmethod
    def nobody(cls) -> Reader:
        """No key and no member (a command, a task): owns nothing."""
        return cls(user_id=None, api_key_id=None, role=None)

    def owns(self, *, user_id: int | None, api_key_id: int | None) -> bool:
        """Whether a record asked by ``user_id`` or ``api_key_id`` is this caller's."""
        if self.api_key_id is not None:
            return api_key_id == self.api_key_id
        return self.user_id is not None and user_id == self.user_id

    def reachable(
        self, reach: Reach, *, user: str = "caller_user", key: str = "caller_api_key"
    ) -> Q:
        """The records within ``reach`` as a filter on their asker fields (named
        ``user`` and ``key``); the caller's organization is the query's to filter."""
        if role_reaches(self.role, reach, own=False):
            return Q(pk__isnull=False)  # every one; not Q(), which an OR would drop
        if self.api_key_id is not None:
            return Q(**{f"{key}_id": self.api_key_id})
        if self.user_id is not None:
            return Q(**{f"{user}_id": self.user_id})
        return Q(pk__in=[])


_WORDS = {
    Action.ASK: "ask questions",
    Action.READ_DOCUMENTS: "read documents",
    Action.EDIT_DOCUMENTS: "upload, change or delete documents",
    Action.MANAGE_SOURCES: "manage data sources and apps",
    Action.AUDIT: "read every answer of the organization",
    Action.MANAGE_MEMBERS: "manage members and API keys",
    Action.DELETE_CONVERSATIONS: "delete threads, messages or responses",
}


def _words(action: Action) -> str:
    return _WORDS[action]
