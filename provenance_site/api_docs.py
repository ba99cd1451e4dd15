"""The Swagger UI page of the OpenAPI schema, under the site's Content-Security-Policy."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response


class ApiDocsView(SpectacularSwaggerSplitView):
    """Swagger UI at ``/api/docs/``: its start-up script served as a file of its own
    (no inline script), its assets from ``SWAGGER_UI_DIST``, which the page's
    Content-Security-Policy therefore admits (``provenance_site/csp.py``)."""

    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        dist = urlsplit(spectacular_settings.SWAGGER_UI_DIST)
        if dist.scheme in ("http", "https"):
            origin = f"{dist.scheme}://{dist.netloc}"
            response.csp_extra_sources = {
                "script-src": [origin],
                "style-src": [origin],
                "style-src-elem": [origin],
                "img-src": [origin],
            }
        return response
