"""Management endpoints of ``/v1/flow/``: data sources and their files, API keys
(apps: ``citations.api.app_management``). Each is thin: parse, call one service
or selector, shape the output. Every lookup is scoped to the caller's
organization (another tenant's id is a 404) and every method states the action
its role must allow (``core.roles``)."""

from __future__ import annotations

from django.urls import path

from documents.api.management.api_keys import ApiKeyRevokeView, ApiKeysView
from documents.api.management.data_sources import (
    DataSourceDetailView,
    DataSourceFilesView,
    DataSourcesView,
)

management_urls = [
    path("data-sources", DataSourcesView.as_view(), name="data-source-list"),
    path(
        "data-sources/<str:data_source_id>",
        DataSourceDetailView.as_view(),
        name="data-source-detail",
    ),
    path(
        "data-sources/<str:data_source_id>/files",
        DataSourceFilesView.as_view(),
        name="data-source-files",
    ),
    path("api-keys", ApiKeysView.as_view(), name="api-key-list"),
    path("api-keys/<str:key_id>/revoke", ApiKeyRevokeView.as_view(), name="api-key-revoke"),
]
