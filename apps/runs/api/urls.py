from django.urls import path

from . import views

urlpatterns = [
    path("runs", views.RunsView.as_view(), name="runs"),
    path("runs/<uuid:run_id>", views.RunDetailView.as_view(), name="run-detail"),
    path("runs/<uuid:run_id>/results", views.RunResultsView.as_view(), name="run-results"),
    path("runs/<uuid:run_id>/items", views.RunItemsView.as_view(), name="run-items"),
    path("runs/<uuid:run_id>/compare/<uuid:other_run_id>", views.RunCompareView.as_view(), name="run-compare"),
    path("runs/<uuid:run_id>/cancel", views.RunCancelView.as_view(), name="run-cancel"),
    path("results/<uuid:result_id>", views.ResultDetailView.as_view(), name="result-detail"),
    path("rubrics/<uuid:rubric_id>/agreement", views.RubricAgreementView.as_view(), name="rubric-agreement"),
    path(
        "rubrics/<uuid:rubric_id>/alignment-trials",
        views.RubricAlignmentTrialsView.as_view(),
        name="rubric-alignment-trials",
    ),
    path("metrics/alignment-trials", views.MetricAlignmentTrialsView.as_view(), name="metric-alignment-trials"),
    path("alignment-trials/<uuid:trial_id>", views.AlignmentTrialView.as_view(), name="alignment-trial"),
    path(
        "alignment-trials/<uuid:trial_id>/publish",
        views.AlignmentTrialPublishView.as_view(),
        name="alignment-trial-publish",
    ),
    path("results/<uuid:result_id>/reviews", views.ResultReviewsView.as_view(), name="result-reviews"),
]

from . import anchors  # noqa: E402 - the judge anchors' views, in their own module

urlpatterns += [
    path("test-sets/<uuid:test_set_id>/anchors", anchors.TestSetAnchorsView.as_view(), name="test-set-anchors"),
    path("anchors/<uuid:anchor_id>", anchors.AnchorSetView.as_view(), name="anchor-set"),
    path("anchors/<uuid:anchor_id>/checks", anchors.AnchorChecksView.as_view(), name="anchor-checks"),
    path("anchor-checks/<uuid:check_id>", anchors.AnchorCheckView.as_view(), name="anchor-check"),
]
