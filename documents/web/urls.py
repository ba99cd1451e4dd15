"""Library pages, mounted under ``/library/``."""

from django.urls import path

from documents.web import views

urlpatterns = [
    path("", views.library, name="web-library"),
    path("files/<str:file_id>/retry", views.retry, name="web-file-retry"),
]
