from django.urls import path

from . import views

# Mounted under /api/v1/. POST /trace (the contract's path) is mounted at the root in evalsite/urls.py.
urlpatterns = [
    path("trace", views.TraceView.as_view(), name="trace-v1"),
    path("trace/history", views.TraceHistoryView.as_view(), name="trace-history"),
    path("trace/history/<int:evaluation_id>", views.TraceEvaluationDetailView.as_view(), name="trace-evaluation"),
]
