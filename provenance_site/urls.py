"""Top-level routes: admin, the REST API, its OpenAPI schema, and the web pages."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from citations.api.views import CitationValidateView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("v1/flow/", include("documents.api.urls")),
    path("semantics/", include("citations.api.urls")),
    path("v1/citations/validate", CitationValidateView.as_view(), name="citations-validate"),
    path("v1/", include("citations.threads.urls")),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(permission_classes=[AllowAny]),
        name="openapi-schema",
    ),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="openapi-schema", permission_classes=[AllowAny]),
        name="api-docs",
    ),
    path("accounts/", include("documents.web.auth_urls")),
    path("library/", include("documents.web.urls")),
    path("", include("citations.web.urls")),
]
