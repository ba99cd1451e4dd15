from django.urls import path

from citations.api import views

urlpatterns = [
    path(
        "apps/<str:llm_app_id>/query-executions",
        views.QueryExecutionsView.as_view(),
        name="query-executions",
    ),
    path(
        "apps/<str:llm_app_id>/query-executions/<str:query_id>",
        views.QueryExecutionDetailView.as_view(),
        name="query-execution-detail",
    ),
    path(
        "apps/<str:llm_app_id>/query-executions/<str:query_id>/validation",
        views.QueryValidationView.as_view(),
        name="query-execution-validation",
    ),
    path(
        "apps/<str:llm_app_id>/query-executions/<str:query_id>/reasoning",
        views.ReasoningView.as_view(),
        name="query-execution-reasoning",
    ),
    path(
        "apps/<str:llm_app_id>/query-executions/<str:query_id>/citations.md",
        views.CitationsMarkdownView.as_view(),
        name="query-execution-citations-markdown",
    ),
    path(
        "apps/<str:llm_app_id>/query-executions/<str:query_execution_id>/citations",
        views.SentenceCitationsView.as_view(),
        name="query-execution-citations",
    ),
    path(
        "apps/<str:llm_app_id>/query-execution-sources/<str:query_id>/get-quoted-sources",
        views.QuotedSourcesView.as_view(),
        name="quoted-sources",
    ),
]
