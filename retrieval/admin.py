"""Vector databases: the officers see their organizations' indexes and fingerprints."""

from django.contrib import admin

from core.admin_scoping import OrganizationScopedAdmin
from retrieval.models import VectorDatabase


@admin.register(VectorDatabase)
class VectorDatabaseAdmin(OrganizationScopedAdmin):
    list_display = ["name", "organization", "embed_model", "analyzer", "index_hash", "updated_at"]
    list_select_related = ["organization"]
    readonly_fields = ["index_hash", "embed_model", "embed_dimensions", "pooling", "analyzer"]
