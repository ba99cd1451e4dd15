"""Library pages, mounted under ``/library/``."""

from django.urls import path

from documents.web import document_views, views

urlpatterns = [
    path("", views.library, name="web-library"),
    path("upload/", views.upload_one, name="web-upload-one"),
    path("files/<str:file_id>/retry", views.retry, name="web-file-retry"),
    path("files/<str:file_id>/download", document_views.download, name="web-file-download"),
    path("documents/<str:document_id>/", document_views.document, name="web-document"),
    path("documents/<str:document_id>/delete/", document_views.delete, name="web-document-delete"),
]
