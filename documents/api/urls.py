from django.urls import path

from documents.api import views
from documents.api.management import management_urls

urlpatterns = [
    path("files", views.FileUploadView.as_view(), name="file-upload"),
    path("files/<str:file_id>", views.FileDetailView.as_view(), name="file-detail"),
    path("files/<str:file_id>/cancel", views.FileCancelView.as_view(), name="file-cancel"),
    path("files/<str:file_id>/content", views.FileContentView.as_view(), name="file-content"),
    path("files/<str:file_id>/markdown", views.FileMarkdownView.as_view(), name="file-markdown"),
    path(
        "vectordb/<str:database_id>/chunk/<str:chunk_id>",
        views.ChunkDetailView.as_view(),
        name="chunk-detail",
    ),
    *management_urls,
]
