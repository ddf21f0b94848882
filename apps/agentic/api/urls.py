from django.urls import path

from . import views

urlpatterns = [
    path("health", views.HealthView.as_view(), name="agentic-health"),
    path("evaluate/session", views.EvaluateSessionView.as_view(), name="agentic-evaluate-session"),
    path("evaluate/manual", views.EvaluateManualView.as_view(), name="agentic-evaluate-manual"),
    path("evaluate/batch", views.EvaluateBatchView.as_view(), name="agentic-evaluate-batch"),
    path("summary", views.SummaryView.as_view(), name="agentic-summary"),
    path("agreement", views.AgreementView.as_view(), name="agentic-agreement"),
    path("export", views.ExportView.as_view(), name="agentic-export"),
    path("history", views.HistoryView.as_view(), name="agentic-history"),
    path("history/<str:session_id>", views.HistoryDetailView.as_view(), name="agentic-history-detail"),
    path("clear", views.ClearView.as_view(), name="agentic-clear"),
]
