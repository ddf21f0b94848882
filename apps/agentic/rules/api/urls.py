from django.urls import path

from . import views as rule_views

urlpatterns = [
    path("evaluation-rules", rule_views.RuleListView.as_view(), name="evaluation-rules"),
    path("evaluation-rules/<int:rule_id>", rule_views.RuleDetailView.as_view(), name="evaluation-rule"),
    path(
        "evaluation-rules/<int:rule_id>/backfill",
        rule_views.RuleBackfillView.as_view(),
        name="evaluation-rule-backfill",
    ),
]
