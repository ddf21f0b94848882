import uuid

import pytest

from apps.runs.models import EvaluationRun

from .conftest import AGENT, RUBRIC_ID, TEST_SET

pytestmark = pytest.mark.django_db(transaction=True)

RUN_FIELDS = {"run_id", "dataset_id", "agent_id", "status", "total", "completed", "passed", "failed", "concurrency",
              "started_at", "completed_at", "error", "rubric_id", "rubric_version", "test_set_id", "test_set_version",
              "component_scope_filter", "component_ids_filter", "component_scores", "criteria_passed", "criteria_total",
              "rubric_rules_passed", "rubric_rules_total", "bot_llm_provider", "bot_llm_model", "created_at"}
RESULT_FIELDS = {"result_id", "run_id", "test_case_id", "langsmith_run_id", "input", "output", "scores", "item_name",
                 "item_type", "criteria_scores", "criteria_passed", "rubric_scores", "rubric_passed", "passed",
                 "duration_ms", "created_at"}


def start(api, **extra):
    body = {"agent_id": AGENT, "test_set_id": str(TEST_SET), "rubric_id": str(RUBRIC_ID), "judge_model": "heuristic",
            **extra}
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
    listed = api.get(f"/api/v1/runs?agent_id={AGENT}&status=completed&limit=5").json()
    assert len(listed) == 2 and listed[0]["created_at"] >= listed[1]["created_at"]
    assert len(api.get(f"/api/v1/runs?agent_id={AGENT}&limit=1").json()) == 1


@pytest.mark.parametrize("body, status", [
    ({"agent_id": "not-an-objectid"}, 422),
    ({"concurrency": 0}, 422),
    ({"concurrency": 33}, 422),
    ({"concurrency": "3"}, 422),
    ({"component_scope_filter": "everywhere"}, 422),
    ({"test_set_id": "not-a-uuid"}, 422),
    ({"agent_id": "b" * 24}, 404),
    ({"test_set_id": str(uuid.UUID(int=999))}, 404),
    ({"rubric_id": str(uuid.UUID(int=999))}, 404),
])
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
