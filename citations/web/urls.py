"""Answer pages, mounted at the site root."""

from django.urls import path

from citations.web import views

urlpatterns = [
    path("", views.ask, name="web-ask"),
    path("ask/stream/", views.ask_stream, name="web-ask-stream"),
    path("answers/<str:query_id>/", views.answer, name="web-answer"),
    path("answers/<str:query_id>/follow-up/", views.follow_up, name="web-follow-up"),
    path("answers/<str:query_id>/feedback/", views.feedback, name="web-feedback"),
    path("answers/<str:query_id>/sources/<str:quoted_as>/", views.source, name="web-source"),
    path(
        "answers/<str:query_id>/sources/<str:quoted_as>/crop.png",
        views.source_crop,
        name="web-source-crop",
    ),
    path("answers/<str:query_id>/retrieved/<int:k_pos>/", views.hit, name="web-hit"),
    path("history/", views.history, name="web-history"),
    path("files/<str:file_id>/pages/<int:number>.png", views.page_image, name="web-page-image"),
]
