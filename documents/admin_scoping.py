"""Tenant scoping for the admin: staff see only their organizations' records.

Superusers see everything; everyone else sees rows whose organization (reached
through ``organization_path``) is one of their memberships.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest


def organization_ids_of(user) -> list:  # noqa: ANN001
    return list(user.memberships.values_list("organization_id", flat=True))


class OrganizationScopedAdmin(admin.ModelAdmin):
    """``organization_path`` is the lookup from this model to its organization id."""

    organization_path = "organization"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(
            **{f"{self.organization_path}__in": organization_ids_of(request.user)}
        )


class EvidenceAdmin(OrganizationScopedAdmin):
    """System-written evidence: viewable, never added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
