"""Online evaluation on a real worker: a trace completed over REST is judged by the rules that match
it without anyone calling evaluate, two rules and an overlapping backfill judge it once."""

from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

from apps.agentic.models import AgentEvaluation, OnlineEvaluationCount
from apps.agentic.rules import services as rule_services
from tests.agentic.factories import EvaluationRuleFactory

from .worker import broker_for_tests, celery_worker, sender, wait_for

pytestmark = [pytest.mark.celery_integration, pytest.mark.django_db(transaction=True)]
BASE = "/api/v1/metrics"


def route_through(monkeypatch, app):
    # The test process runs tasks eagerly; what the rules queue must cross the broker instead.
    monkeypatch.setattr(
        rule_services,
        "_send",
        lambda rule_id, ids, countdown, project_id: app.send_task(
            "apps.agentic.tasks.evaluate_for_rule",
            args=[rule_id, ids],
            kwargs={"project_id": project_id},
            countdown=countdown,
        ),
    )


def handled() -> int:
    return OnlineEvaluationCount.objects.aggregate(n=Sum("count"))["n"] or 0


def complete_over_rest(api, session_id: str):
    api.post(
        f"{BASE}/traces",
        {
            "session_id": session_id,
            "user_query": "List all Kubernetes clusters in Delhi",
            "agent_name": "OrchestratorAgent",
        },
        format="json",
    )
    api.post(
        f"{BASE}/traces/{session_id}/tool-calls",
        {
            "tool_name": "list_k8s_clusters",
            "tool_args": {"datacenter": "Delhi"},
            "tool_result": [{"name": "prod-01"}, {"name": "dev-02"}],
        },
        format="json",
    )
    response = api.post(
        f"{BASE}/traces/{session_id}/complete",
        {"final_response": "Found 2 clusters in Delhi: prod-01, dev-02", "success": True},
        format="json",
    )
    assert response.status_code == 200, response.content


def test_a_rule_judges_a_completed_trace_on_the_worker(tmp_path, monkeypatch, api, staff_api):
    broker_url, options = broker_for_tests(tmp_path)
    route_through(monkeypatch, sender(broker_url, options))
    first = EvaluationRuleFactory(name="every trace")
    second = EvaluationRuleFactory(name="orchestrator", agent_name="OrchestratorAgent")
    EvaluationRuleFactory(name="otlp only", source="otlp")
    with celery_worker(broker_url, tmp_path, concurrency=2):
        complete_over_rest(api, "online-worker-1")
        # Both matching rules' tasks ran on the worker (nobody here evaluates anything).
        assert wait_for(lambda: handled() == 2, timeout=90), "the worker did not run both rules' tasks"
        evaluation = AgentEvaluation.objects.get(session_id="online-worker-1")
        assert evaluation.rule in (first, second) and evaluation.judge == "heuristic:v1"
        assert evaluation.overall_score is not None

        # A backfill over the same window with both rules queues the trace again: it is re-used.
        since = (timezone.now() - timedelta(hours=1)).isoformat()
        for rule in (first, second):
            response = staff_api.post(f"/api/v1/evaluation-rules/{rule.pk}/backfill", {"since": since}, format="json")
            assert response.json()["queued"] == 1
        assert wait_for(lambda: handled() == 4, timeout=90), "the worker did not run the backfill"

    # One verdict, whatever matched it and however often: the judge ran once.
    assert AgentEvaluation.objects.filter(session_id="online-worker-1").count() == 1
    by_outcome = dict(OnlineEvaluationCount.objects.values_list("outcome").annotate(n=Sum("count")))
    assert by_outcome == {"evaluated": 1, "reused": 3}
    history = api.get(f"{BASE}/history/online-worker-1").json()
    assert history["rule"] == {"id": evaluation.rule.pk, "name": evaluation.rule.name}
