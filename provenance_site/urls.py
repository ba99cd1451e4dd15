"""Top-level routes: admin, the REST API, its OpenAPI schema, and the web pages."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny

from citations.api.app_management import app_urls
from citations.api.views import CitationValidateView
from provenance_site.api_docs import ApiDocsView
from provenance_site.health import healthz

handler400 = "provenance_site.error_pages.bad_request"
handler403 = "provenance_site.error_pages.permission_denied"
handler404 = "provenance_site.error_pages.page_not_found"
handler500 = "provenance_site.error_pages.server_error"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("v1/flow/", include("documents.api.urls")),
    path("v1/flow/", include(app_urls)),
    path("semantics/", include("citations.api.urls")),
    path("v1/citations/validate", CitationValidateView.as_view(), name="citations-validate"),
    path("v1/", include("citations.threads.urls")),
    path("v1/", include("citations.responses.urls")),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(permission_classes=[AllowAny]),
        name="openapi-schema",
    ),
    path("api/docs/", ApiDocsView.as_view(url_name="openapi-schema"), name="api-docs"),
    path("accounts/", include("documents.web.auth_urls")),
    path("library/", include("documents.web.urls")),
    path("", include("citations.web.urls")),
]
