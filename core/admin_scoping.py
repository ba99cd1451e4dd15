"""Tenant scoping for the admin: staff see only their organizations' records.

Superusers see everything; everyone else sees a model's rows in the
organizations (reached through ``organization_path``) where their role brings
the permission to view that model, and changes or deletes a row only where
their role there brings that permission (core.role_backend).
"""

from __future__ import annotations

import re
from typing import cast

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import models
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from core.role_backend import organizations_granting

# the start of an id or hash as lists, logs and trace lines show it: 8+ hex digits
_ID_PREFIX = re.compile(r"[0-9a-f]{8}[0-9a-f-]{0,63}")


class OrganizationScopedAdmin(admin.ModelAdmin):
    """``organization_path`` is the lookup from this model to its organization id."""

    organization_path = "organization"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        mine = organizations_granting(request.user, self._permission("view"))
        return queryset.filter(**{f"{self.organization_path}__in": mine})

    def _permission(self, verb: str) -> str:
        return f"{self.opts.app_label}.{verb}_{self.opts.model_name}"

    def _held_for(self, request: HttpRequest, verb: str, obj: models.Model) -> bool:
        """Whether the user's role in ``obj``'s organization brings ``verb`` on it."""
        if request.user.is_superuser:
            return True
        organization_id = organization_id_of(obj, self.organization_path)
        return organization_id in organizations_granting(request.user, self._permission(verb))

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or self._held_for(request, "change", obj))

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or self._held_for(request, "delete", obj))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """``=id``-style fields also match the start of an id or hash: an officer pastes
        "3f2a9c1e" from a trace line, not all 36 characters."""
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip().strip("\"'").lower()
        fields = self.get_search_fields(request)
        exact_fields = [field[1:] for field in fields if field.startswith("=")]
        # a prefix match casts the id to text and scans the tenant's rows: fine for an
        # officer's search, and only for a term that looks like the start of an id
        if exact_fields and _ID_PREFIX.fullmatch(term):
            starts = Q()
            for field in exact_fields:
                starts |= Q(**{f"{field}__startswith": term})
            results |= queryset.filter(starts)
        return results, may_have_duplicates

    def formfield_for_foreignkey(
        self, db_field: models.ForeignKey, request: HttpRequest, **kwargs: object
    ) -> forms.ModelChoiceField | None:
        _choices_scope(db_field, request, kwargs, self._permission("change"))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(
        self, db_field: models.ManyToManyField, request: HttpRequest, **kwargs: object
    ) -> forms.ModelMultipleChoiceField | None:
        _choices_scope(db_field, request, kwargs, self._permission("change"))
        return super().formfield_for_manytomany(db_field, request, **kwargs)


def organization_id_of(obj: models.Model, path: str) -> object:
    """The organization id of ``obj``, following an admin's ``organization_path``."""
    *hops, last = path.split("__")
    target: object = obj
    for hop in hops:
        target = getattr(target, hop)
    if last in {"pk", "id"}:
        return getattr(target, "pk", None)
    return getattr(target, last if last.endswith("_id") else f"{last}_id")


def _choices_scope(
    db_field: models.Field, request: HttpRequest, kwargs: dict, permission: str
) -> None:
    """A form's choices of organization (or of anything owned by one) are those the
    staff member's role may change this model in, never another tenant's."""
    if request.user.is_superuser:
        return
    related = cast("type[models.Model]", db_field.related_model)  # a relation's model
    mine = organizations_granting(request.user, permission)
    if related._meta.label == "documents.Organization":
        kwargs["queryset"] = related._default_manager.filter(pk__in=mine)
    elif related is get_user_model():
        # people of one's own organizations only; someone new is added by a superuser
        kwargs["queryset"] = related._default_manager.filter(
            memberships__organization_id__in=mine
        ).distinct()
    elif any(f.name == "organization" for f in related._meta.fields):
        kwargs["queryset"] = related._default_manager.filter(organization_id__in=mine)


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
