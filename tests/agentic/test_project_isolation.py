"""Agentic evaluations belong to the project of the trace judged: the attacks of a key of project B
on project A's sessions, evaluations, summary, export and /clear."""

import json

import pytest

from apps.agentic.models import AgentEvaluation, EvaluationRollup
from apps.core.models import ProjectRole
from apps.traces.models import AgentTrace
from tests.core.factories import ProjectFactory, project_key_client

pytestmark = pytest.mark.django_db

BASE = "/api/v1/metrics"


@pytest.fixture
def alpha():
    return ProjectFactory(slug="alpha")


@pytest.fixture
def alpha_api(alpha):
    return project_key_client(alpha, role=ProjectRole.ADMIN, username="alice")


@pytest.fixture
def beta_api():
    return project_key_client(ProjectFactory(slug="beta"), role=ProjectRole.ADMIN, username="bob")


@pytest.fixture
def alpha_evaluated(alpha_api):
    """Project A holds one finished trace, `secret`, and its evaluation."""
    trace = {
        "session_id": "secret",
        "user_query": "List clusters",
        "agent_name": "AlphaAgent",
        "final_response": "Two clusters.",
        "success": True,
        "operation": "list",
    }
    assert alpha_api.post(f"{BASE}/traces/batch", {"traces": [trace]}, format="json").json()["accepted_count"] == 1
    response = alpha_api.post(f"{BASE}/evaluate/session", {"session_id": "secret"}, format="json")
    assert response.status_code == 200, response.content


def test_another_projects_session_cannot_be_evaluated_or_read(alpha_evaluated, beta_api):
    assert beta_api.post(f"{BASE}/evaluate/session", {"session_id": "secret"}, format="json").status_code == 404
    batch = beta_api.post(f"{BASE}/evaluate/batch", {"session_ids": ["secret"]}, format="json").json()
    assert batch["evaluated"] == 0 and batch["not_found"] == 1
    hidden = beta_api.get(f"{BASE}/history/secret")
    assert hidden.status_code == 404
    assert hidden.json() == beta_api.get(f"{BASE}/history/never-was").json() | {
        "detail": "No evaluation found for session secret"
    }
    assert AgentEvaluation.objects.count() == 1


def test_history_summary_health_and_export_show_only_the_keys_project(alpha_evaluated, alpha_api, beta_api):
    assert beta_api.get(f"{BASE}/history").json()["evaluations"] == []
    assert beta_api.get(f"{BASE}/summary").json()["total_evaluations"] == 0
    assert beta_api.get(f"{BASE}/summary").json()["by_agent"] == {}
    health = beta_api.get(f"{BASE}/health").json()["database"]
    assert (health["evaluations_stored"], health["traces_stored"]) == (0, 0)
    assert json.loads(beta_api.get(f"{BASE}/export?format=json").json()["data"]) == []
    streamed = beta_api.get(f"{BASE}/export?format=jsonl&download=true")
    assert b"".join(streamed.streaming_content) == b""
    # A's own key sees its evaluation everywhere.
    assert alpha_api.get(f"{BASE}/summary").json()["by_agent"] == {
        "AlphaAgent": {"count": 1, "avg_score": pytest.approx(AgentEvaluation.objects.get().overall_score, abs=1e-4)}
    }
    assert [r["session_id"] for r in json.loads(alpha_api.get(f"{BASE}/export?format=json").json()["data"])] == [
        "secret"
    ]


def test_clear_with_another_projects_key_leaves_this_project_alone(alpha_evaluated, alpha, beta_api):
    assert beta_api.delete(f"{BASE}/clear").status_code == 200
    assert AgentTrace.objects.filter(project=alpha).count() == 1
    assert AgentEvaluation.objects.filter(project=alpha).count() == 1
    assert EvaluationRollup.objects.filter(project=alpha).exists()


def test_clear_empties_the_keys_own_project(alpha_evaluated, alpha_api, beta_api):
    beta_api.post(
        f"{BASE}/traces/batch",
        {"traces": [{"session_id": "b", "user_query": "q", "agent_name": "B", "final_response": "r", "success": True}]},
        format="json",
    )
    assert alpha_api.delete(f"{BASE}/clear").status_code == 200
    assert not AgentEvaluation.objects.exists()
    assert list(AgentTrace.objects.values_list("session_id", flat=True)) == ["b"]


def test_a_manual_evaluation_is_in_the_keys_project(alpha, alpha_api, beta_api):
    body = {"user_query": "hi", "agent_response": "hello", "tool_calls": []}
    assert alpha_api.post(f"{BASE}/evaluate/manual", body, format="json").status_code == 200
    assert AgentEvaluation.objects.get().project == alpha
    assert beta_api.get(f"{BASE}/history").json()["evaluations"] == []
