import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.agentic.models import AgentEvaluation
from apps.agentic.services import evaluate_sessions
from apps.traces.models import AgentTrace


@pytest.fixture
def admin_client_logged_in(db):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_prometheus_series_from_the_database(client, demo_traces):
    evaluate_sessions(session_ids=demo_traces, judge="heuristic")
    text = client.get("/metrics").content.decode()
    ratings = AgentEvaluation.objects.filter(agent_name="OrchestratorAgent").values_list("rating", flat=True)
    for rating in set(ratings):
        count = list(ratings).count(rating)
        assert f'vayu_agentic_evaluations_total{{agent_name="OrchestratorAgent",score_category="{rating}"}} {count}.0' in text
    assert 'vayu_agentic_overall_score_count{agent_name="OrchestratorAgent"} 3.0' in text
    assert 'vayu_agentic_task_adherence_score_bucket{agent_name="NetworkAgent",le="+Inf"} 1.0' in text
    assert "vayu_agentic_tool_call_accuracy_score_sum" in text


def test_admin_lists_and_links(admin_client_logged_in, demo_traces):
    evaluate_sessions(session_ids=demo_traces[:1], judge="heuristic")
    evaluation = AgentEvaluation.objects.get()
    listing = admin_client_logged_in.get("/admin/agentic/agentevaluation/?rating__exact=" + evaluation.rating)
    assert listing.status_code == 200 and evaluation.session_id in listing.content.decode()
    detail = admin_client_logged_in.get(f"/admin/agentic/agentevaluation/{evaluation.id}/change/")
    assert f"/admin/traces/agenttrace/{evaluation.trace_id}/change/" in detail.content.decode()
    trace_page = admin_client_logged_in.get(f"/admin/traces/agenttrace/{evaluation.trace_id}/change/")
    assert "heuristic:v1" in trace_page.content.decode()


def test_admin_action_evaluates_through_celery(admin_client_logged_in, demo_traces, django_capture_on_commit_callbacks):
    ids = list(AgentTrace.objects.filter(session_id__in=demo_traces[:3]).values_list("id", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client_logged_in.post("/admin/traces/agenttrace/", {
            "action": "evaluate_selected_traces", "_selected_action": ids})
    assert response.status_code == 302
    assert set(AgentEvaluation.objects.values_list("trace_id", flat=True)) == set(ids)


def test_seed_demo_loads_evaluations(db):
    from django.core.management import call_command

    call_command("seed_demo", stdout=open("/dev/null", "w"))
    assert AgentEvaluation.objects.count() == 5
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    assert AgentEvaluation.objects.count() == 5
