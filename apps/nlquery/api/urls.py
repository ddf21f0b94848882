from django.urls import path

from . import views

urlpatterns = [
    path("metrics-query", views.MetricsQueryView.as_view(), name="metrics-query"),
]
