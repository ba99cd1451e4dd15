"""Who may call the API: anyone acting for an organization (key or member)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core.tenancy import organization_of


class HasOrganization(BasePermission):
    """The caller is an API key or a signed-in member of some organization."""

    message = "Authentication credentials were not provided or have no organization."

    def has_permission(self, request: Request, view: Any) -> bool:
        return organization_of(request) is not None
