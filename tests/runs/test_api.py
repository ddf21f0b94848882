import uuid

import pytest
from django.test import TestCase

from apps.runs.models import EvaluationRun
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET

pytestmark = pytest.mark.django_db

RUN_FIELDS = {
    "run_id",
    "dataset_id",
    "agent_id",
    "status",
    "total",
    "completed",
    "passed",
    "failed",
    "concurrency",
    "started_at",
    "completed_at",
    "error",
    "rubric_id",
    "rubric_version",
    "test_set_id",
    "test_set_version",
    "component_scope_filter",
    "component_ids_filter",
    "component_scores",
    "criteria_passed",
    "criteria_total",
    "rubric_rules_passed",
    "rubric_rules_total",
    "bot_llm_provider",
    "bot_llm_model",
    "created_at",
}
RESULT_FIELDS = {
    "result_id",
    "run_id",
    "test_case_id",
    "langsmith_run_id",
    "input",
    "output",
    "scores",
    "item_name",
    "item_type",
    "criteria_scores",
    "criteria_passed",
    "rubric_scores",
    "rubric_passed",
    "passed",
    "duration_ms",
    "created_at",
}


def start(api, **extra):
    body = {
        "agent_id": PLAN_AGENT,
        "test_set_id": str(PLAN_TEST_SET),
        "rubric_id": str(PLAN_RUBRIC),
        "judge_model": "heuristic",
        **extra,
    }
    # The run is enqueued on commit; the test's transaction never commits, so run what the request
    # queued when it returns (what the django_capture_on_commit_callbacks fixture does).
    with TestCase.captureOnCommitCallbacks(execute=True):
        return api.post("/api/v1/runs", body, format="json")


def test_start_read_and_list_a_run(api, plan):
    created = start(api, concurrency=2)
    assert created.status_code == 201
    assert RUN_FIELDS <= set(created.json())
    run_id = created.json()["run_id"]

    run = api.get(f"/api/v1/runs/{run_id}").json()
    assert run["status"] == "completed" and run["total"] == run["completed"] == 6
    assert (run["test_set_version"], run["rubric_version"]) == (2, 1)
    assert set(run["component_scores"]["prompt"]) == {"score", "total", "passed"}

    results = api.get(f"/api/v1/runs/{run_id}/results").json()
    assert len(results) == 6 and RESULT_FIELDS <= set(results[0])
    criterion = results[0]["criteria_scores"][0]
    assert {"criterion", "passed", "score", "reasoning"} <= set(criterion)
    assert {"rule_id", "rule_name", "severity", "passed", "score", "reasoning"} <= set(results[0]["rubric_scores"][0])
    assert results[0]["output"]["messages"][0]["role"] == "user"

    assert len(api.get(f"/api/v1/runs/{run_id}/results?passed=false").json()) == run["failed"]
    assert api.get(f"/api/v1/runs/{run_id}/results?item_type=scenario").json() == []

    start(api)
    listed = api.get(f"/api/v1/runs?agent_id={PLAN_AGENT}&status=completed&limit=5").json()
    assert len(listed) == 2 and listed[0]["created_at"] >= listed[1]["created_at"]
    assert len(api.get(f"/api/v1/runs?agent_id={PLAN_AGENT}&limit=1").json()) == 1


@pytest.mark.parametrize(
    "body, status",
    [
        ({"agent_id": "not-an-objectid"}, 422),
        ({"concurrency": 0}, 422),
        ({"concurrency": 33}, 422),
        ({"concurrency": "3"}, 422),
        ({"component_scope_filter": "everywhere"}, 422),
        ({"test_set_id": "not-a-uuid"}, 422),
        ({"agent_id": "b" * 24}, 404),
        ({"test_set_id": str(uuid.UUID(int=999))}, 404),
        ({"rubric_id": str(uuid.UUID(int=999))}, 404),
    ],
)
def test_bad_run_requests(api, plan, body, status):
    response = start(api, **body)
    assert response.status_code == status, response.json()
    assert "detail" in response.json()
    assert EvaluationRun.objects.count() == 0


def test_unknown_run_is_404(api):
    missing = uuid.UUID(int=42)
    for path in (f"/api/v1/runs/{missing}", f"/api/v1/runs/{missing}/results"):
        assert api.get(path).status_code == 404
    assert api.post(f"/api/v1/runs/{missing}/cancel").status_code == 404


def test_list_filters_are_validated(api):
    assert api.get("/api/v1/runs?limit=0").status_code == 422
    assert api.get("/api/v1/runs?status=weird").status_code == 422


def test_cancel_a_finished_run_is_409(api, plan):
    run_id = start(api).json()["run_id"]
    response = api.post(f"/api/v1/runs/{run_id}/cancel")
    assert response.status_code == 409 and "already completed" in response.json()["detail"]


def test_runs_need_a_key(anon_api, plan):
    assert anon_api.get("/api/v1/runs").status_code == 401
    assert start(anon_api).status_code == 401


def test_unassessed_outcome_and_coverage_in_the_api(api, plan, monkeypatch):
    """Issue 16, fail-closed: a skipped high-severity rule makes the item unassessed (passed false),
    counted apart from failed, and the run shows its verdict denominators."""
    from apps.runs.judging import heuristic
    from apps.runs.judging.types import Verdict

    def skip_high(rule, transcript):
        if rule["severity"] == "high":
            return Verdict.skipped("heuristic:v1", "cannot judge")
        return Verdict.of(passed=True, reasoning="ok", judge="heuristic:v1")

    monkeypatch.setattr(heuristic, "judge_rule", skip_high)
    run = api.get(f"/api/v1/runs/{start(api).json()['run_id']}").json()
    assert {"unassessed", "coverage"} <= set(run)
    assert (run["passed"], run["failed"], run["unassessed"]) == (0, 2, 4)
    assert set(run["coverage"]) == {"scored", "skipped", "errored"}
    assert run["coverage"]["skipped"] == 6 * 2 and run["coverage"]["errored"] == 0
    results = api.get(f"/api/v1/runs/{run['run_id']}/results").json()
    assert sorted(r["outcome"] for r in results) == ["failed"] * 2 + ["unassessed"] * 4
    assert all(r["passed"] is False for r in results)
