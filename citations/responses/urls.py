from django.urls import path

from citations.responses import views

urlpatterns = [
    path("responses", views.ResponsesView.as_view(), name="responses"),
    path("responses/<str:response_id>", views.ResponseDetailView.as_view(), name="response-detail"),
]
