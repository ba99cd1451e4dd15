"""Who is calling: one value, built once from a request, that views hand to services.

Services keep their ``user``/``api_key``/``origin``/``user_agent`` arguments
(commands and tasks call them with no request at all); a view reads those off its :class:`Caller`
instead of each one digging in ``request.auth`` and ``request.META``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rest_framework.exceptions import PermissionDenied

from core.authentication import api_key_of
from core.tenancy import organization_of
from core.user_agents import MAX_USER_AGENT_CHARS as MAX_USER_AGENT_CHARS  # re-exported
from core.user_agents import user_agent_clean

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.http import HttpRequest
    from rest_framework.request import Request

    from documents.models import ApiKey, Organization


@dataclass(frozen=True)
class Caller:
    """The signed-in user (None for nobody or an API key alone), the API key the
    request authenticated with, the organization it acts for, and where it came from."""

    user: AbstractBaseUser | None
    api_key: ApiKey | None
    organization: Organization | None
    origin: str | None = None
    user_agent: str | None = None

    @classmethod
    def from_request(cls, request: HttpRequest | Request) -> Caller:
        """The caller of ``request``; reads the organization (one query for a session)."""
        user = getattr(request, "user", None)
        return cls(
            user=user if user is not None and user.is_authenticated else None,
            api_key=api_key_of(request),
            organization=organization_of(request),
            origin=client_address(request),
            user_agent=client_user_agent(request),
        )

    @property
    def member_organization(self) -> Organization:
        """The organization of a caller ``HasOrganization`` let through (the API's
        default permission: it refuses a caller without one)."""
        if self.organization is None:
            raise PermissionDenied("no organization")
        return self.organization

    @property
    def label(self) -> str:
        """Who asked, as recorded on an answer or a thread ("anonymous" for nobody)."""
        return caller_label(user=self.user, api_key=self.api_key)


def caller_label(
    *, user: AbstractBaseUser | None, api_key: ApiKey | None, nobody: str = "anonymous"
) -> str:
    """Who acted, in words that stay meaningful after the account or key is gone:
    ``api-key:<prefix>``, ``user:<name>``, else ``nobody``."""
    if api_key is not None:
        return f"api-key:{api_key.prefix}"
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.get_username()}"
    return nobody


def client_address(request: HttpRequest | Request) -> str | None:
    """The caller's address as the server saw it (proxies are the operator's to configure)."""
    return request.META.get("REMOTE_ADDR") or None


def client_user_agent(request: HttpRequest | Request) -> str | None:
    """The client's User-Agent header as recorded (core/user_agents.py); None without one."""
    return user_agent_clean(request.META.get("HTTP_USER_AGENT")) or None
