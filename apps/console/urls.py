from django.urls import path

from apps.runs import views as runs
from apps.traces import views as traces

from . import views

app_name = "console"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("runs/", runs.run_list, name="run-list"),
    path("runs/new/", runs.run_launch, name="run-launch"),
    path("runs/compare/", runs.run_compare, name="run-compare"),
    path("runs/<uuid:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/progress/", runs.run_progress, name="run-progress"),
    path("runs/<uuid:run_id>/cancel/", runs.run_cancel, name="run-cancel"),
    path("runs/<uuid:run_id>/rerun/", runs.run_rerun, name="run-rerun"),
    path("results/<uuid:result_id>/", runs.result_detail, name="result-detail"),
    path("rubrics/<uuid:rubric_id>/", runs.rubric_page, name="rubric"),
    path("traces/<path:session_id>/", traces.trace_page, name="trace"),
]
