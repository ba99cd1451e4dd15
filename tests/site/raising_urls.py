"""The site's URLs and error handlers, plus views that fail, for the error page tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from provenance_site.urls import handler400, handler403, handler404, handler500, urlpatterns


def fail(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [path("v1/test-fail", fail), path("test-fail", fail), *urlpatterns]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
