from django.urls import path

from . import views

urlpatterns = [
    path("bots", views.BotListView.as_view(), name="bot-list"),
    path("bots/<str:agent_id>", views.BotDetailView.as_view(), name="bot-detail"),
    path("bots/<str:agent_id>/context", views.BotContextView.as_view(), name="bot-context"),
    path(
        "bots/<str:agent_id>/knowledge-bases/<str:kb_id>/documents",
        views.KnowledgeBaseDocumentsView.as_view(),
        name="bot-kb-documents",
    ),
]
