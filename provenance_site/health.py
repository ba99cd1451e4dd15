"""``GET /healthz``: is this web process able to serve? For load balancers and
the container's HEALTHCHECK; it reads nothing but ``SELECT 1``."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from core.errors import OUTAGE_RETRY_AFTER_SECONDS


@csrf_exempt  # nothing to forge: any other method is 405
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok"}`` when the database answers, else 503 naming it."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        return JsonResponse(
            {"status": "unavailable", "database": "unreachable"},
            status=503,
            headers={"Retry-After": str(OUTAGE_RETRY_AFTER_SECONDS)},
        )
    return JsonResponse({"status": "ok", "database": "ok"})
