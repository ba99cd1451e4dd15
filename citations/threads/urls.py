from django.urls import path

from citations.threads import views

urlpatterns = [
    path("threads", views.ThreadsView.as_view(), name="threads"),
    path("threads/<str:thread_id>", views.ThreadDetailView.as_view(), name="thread-detail"),
    path(
        "threads/<str:thread_id>/messages",
        views.MessagesView.as_view(),
        name="thread-messages",
    ),
    path(
        "threads/<str:thread_id>/messages/<str:message_id>",
        views.MessageDetailView.as_view(),
        name="thread-message-detail",
    ),
    path("threads/<str:thread_id>/runs", views.RunsView.as_view(), name="thread-runs"),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>",
        views.RunDetailView.as_view(),
        name="thread-run-detail",
    ),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/cancel",
        views.RunCancelView.as_view(),
        name="thread-run-cancel",
    ),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/steps",
        views.RunStepsView.as_view(),
        name="thread-run-steps",
    ),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/steps/<str:step_id>",
        views.RunStepDetailView.as_view(),
        name="thread-run-step-detail",
    ),
]
