import pytest

from apps.agentic.demo import load_demo_evaluations
from apps.agentic.models import AgentEvaluation
from apps.traces.models import AgentTrace
from tests.agentic.factories import AgentEvaluationFactory
from tests.prometheus_text import sample
from tests.traces.factories import AgentTraceFactory


def test_prometheus_series_come_from_stored_evaluations(client, demo_traces):
    load_demo_evaluations()
    text = client.get("/metrics").content.decode()
    assert (
        sample(
            text,
            "vayu_agentic_evaluations_total",
            agent_name="OrchestratorAgent",
            score_category="excellent",
            project="default",
        )
        == 2
    )
    assert (
        sample(
            text,
            "vayu_agentic_evaluations_total",
            agent_name="NetworkAgent",
            score_category="excellent",
            project="default",
        )
        == 1
    )
    assert (
        sample(text, "vayu_agentic_task_adherence_score_count", agent_name="OrchestratorAgent", project="default") == 3
    )
    assert (
        sample(text, "vayu_agentic_overall_score_bucket", agent_name="NetworkAgent", le="+Inf", project="default") == 1
    )
    assert (
        sample(text, "vayu_agentic_overall_score_bucket", agent_name="NetworkAgent", le="0.9", project="default") == 0
    )
    assert (
        sample(
            text, "vayu_agentic_tool_call_accuracy_score_bucket", agent_name="BillingAgent", le="0.4", project="default"
        )
        == 1
    )
    billing = AgentEvaluation.objects.get(agent_name="BillingAgent")
    assert sample(
        text, "vayu_agentic_intent_resolution_score_sum", agent_name="BillingAgent", project="default"
    ) == pytest.approx(billing.metrics["intent_resolution"].value)


def test_demo_loader_is_idempotent(demo_traces):
    assert load_demo_evaluations() == 5
    assert load_demo_evaluations() == 0
    assert AgentEvaluation.objects.count() == 5


def test_admin_evaluation_list_filters_and_trace_link(admin_client, demo_traces):
    load_demo_evaluations()
    listing = admin_client.get("/admin/agentic/agentevaluation/?rating__exact=excellent")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "demo_k8s_list_delhi" in html and "demo_billing_wrong_tool" not in html
    trace = AgentTrace.objects.get(session_id="demo_k8s_list_delhi")
    assert f"/admin/traces/agenttrace/{trace.pk}/change/" in html
    by_agent = admin_client.get("/admin/agentic/agentevaluation/?agent_name=BillingAgent").content.decode()
    assert "demo_billing_wrong_tool" in by_agent and "demo_k8s_list_delhi" not in by_agent
    evaluation = AgentEvaluation.objects.get(session_id="demo_billing_wrong_tool")
    page = admin_client.get(f"/admin/agentic/agentevaluation/{evaluation.pk}/change/")
    assert page.status_code == 200 and "no tool fits" in page.content.decode()


def test_trace_page_lists_its_evaluations(admin_client):
    trace = AgentTraceFactory()
    AgentEvaluationFactory(trace=trace)
    html = admin_client.get(f"/admin/traces/agenttrace/{trace.pk}/change/").content.decode()
    assert "heuristic:v1" in html and "Excellent" in html and "agentevaluation/" in html


def test_admin_action_evaluates_selected_traces_through_celery(
    admin_client, demo_traces, django_capture_on_commit_callbacks
):
    ids = list(AgentTrace.objects.filter(agent_name="OrchestratorAgent").values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True) as enqueued:
        response = admin_client.post(
            "/admin/traces/agenttrace/", {"action": "evaluate_selected_traces", "_selected_action": ids}, follow=True
        )
    assert response.status_code == 200 and "queued" in response.content.decode()
    # The task is enqueued on commit, never inside the request's transaction; eager Celery ran it then.
    assert enqueued
    assert set(AgentEvaluation.objects.values_list("session_id", flat=True)) == set(
        AgentTrace.objects.filter(pk__in=ids).values_list("session_id", flat=True)
    )


def test_running_totals_match_a_rebuild_from_the_rows(api, demo_traces):
    from apps.agentic.models import EvaluationRollup
    from apps.agentic.services import evaluation_rollup_rebuild

    load_demo_evaluations()
    api.post("/api/v1/metrics/evaluate/session", {"session_id": "demo_k8s_list_delhi", "force": True}, format="json")
    api.post("/api/v1/metrics/evaluate/manual", {"user_query": "hello", "agent_response": "Hi!"}, format="json")
    summary = api.get("/api/v1/metrics/summary").json()
    assert summary["total_evaluations"] == AgentEvaluation.objects.count() == 7

    def snapshot():
        return sorted(
            (
                r.agent_name,
                r.operation,
                r.rating,
                r.count,
                r.overall_count,
                round(r.overall_sum, 6),
                r.tool_call_accuracy_count,
            )
            for r in EvaluationRollup.objects.all()
        )

    incremental = snapshot()
    evaluation_rollup_rebuild()
    assert snapshot() == incremental
    assert api.get("/api/v1/metrics/summary").json() == summary
    # The manual chit-chat had no tool calls to judge: its skipped metric is not counted.
    manual = next(r for r in incremental if r[0] == "manual")
    assert manual[6] == 0 and summary["by_agent"]["manual"]["count"] == 1
