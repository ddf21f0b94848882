from django.urls import path

from .views import account, audit, dashboard, exports, ingestion, project, queues, rag, runs, traces

app_name = "console"
urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("login/", account.login, name="login"),
    path("logout/", account.logout, name="logout"),
    path("project/", account.project_switch, name="project-switch"),
    path("project/settings/", project.project_page, name="project"),
    path("project/members/", project.project_member_set, name="project-member-set"),
    path("project/members/remove/", project.project_member_remove, name="project-member-remove"),
    path("runs/", runs.run_list, name="run-list"),
    path("runs/new/", runs.run_launch, name="run-launch"),
    path("runs/compare/", runs.run_compare, name="run-compare"),
    path("runs/<uuid:run_id>/", runs.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/progress/", runs.run_progress, name="run-progress"),
    path("runs/<uuid:run_id>/live/", runs.run_live, name="run-live"),
    path("runs/<uuid:run_id>/cancel/", runs.run_cancel, name="run-cancel"),
    path("runs/<uuid:run_id>/rerun/", runs.run_rerun, name="run-rerun"),
    path("runs/<uuid:run_id>/export.<str:fmt>", exports.run_export, name="run-export"),
    path("results/<uuid:result_id>/", runs.result_detail, name="result-detail"),
    path("rubrics/<uuid:rubric_id>/", runs.rubric_page, name="rubric"),
    path("traces/", traces.trace_list, name="trace-list"),
    path("rag/", rag.rag_list, name="rag-list"),
    path("ingestion/", ingestion.ingestion_page, name="ingestion"),
    path("audit/", audit.audit_page, name="audit"),
    path("rag/<int:evaluation_id>/", rag.rag_detail, name="rag-detail"),
    path("queues/", queues.queue_list, name="queue-list"),
    path("queues/add/", queues.queue_item_add, name="queue-item-add"),
    path("queues/<int:queue_id>/", queues.queue_page, name="queue"),
    path("queues/<int:queue_id>/fill/", queues.queue_fill, name="queue-fill"),
    path("queues/<int:queue_id>/review/", queues.queue_review_next, name="queue-review"),
    path("queues/<int:queue_id>/items/<int:item_id>/", queues.queue_item_page, name="queue-item"),
    path("queues/<int:queue_id>/items/<int:item_id>/assign/", queues.queue_item_assign, name="queue-item-assign"),
    path("queues/<int:queue_id>/items/<int:item_id>/claim/", queues.queue_item_claim, name="queue-item-claim"),
    path("traces/<path:session_id>/", traces.trace_page, name="trace"),
]
