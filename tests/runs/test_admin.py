import pytest

from apps.runs.models import EvaluationResult, EvaluationRun

from .conftest import AGENT, RUBRIC_ID, TEST_SET

pytestmark = pytest.mark.django_db(transaction=True)


def test_launch_from_the_admin_then_drill_down(admin_client, plan):
    page = admin_client.get("/admin/runs/evaluationrun/launch/")
    assert page.status_code == 200 and b"Launch run" in page.content
    response = admin_client.post("/admin/runs/evaluationrun/launch/", {
        "agent_id": AGENT, "test_set_id": str(TEST_SET), "rubric_id": str(RUBRIC_ID), "concurrency": 2,
        "judge_model": "heuristic"})
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{run.pk}/change/")

    listing = admin_client.get("/admin/runs/evaluationrun/").content.decode()
    assert "<progress" in listing and "67% (4/6)" in listing and "Launch a run" in listing
    run_page = admin_client.get(f"/admin/runs/evaluationrun/{run.pk}/change/").content.decode()
    assert "knowledge_base: " in run_page and "item 2" in run_page

    failed = EvaluationResult.objects.filter(run=run, passed=False).first()
    result_page = admin_client.get(f"/admin/runs/evaluationresult/{failed.pk}/change/").content.decode()
    assert "FAIL" in result_page and "wifi password" in result_page
    assert "<details><summary>tool call <code>search_kb</code>" in result_page
    assert "heuristic:v1" in result_page


def test_launch_form_shows_service_errors(admin_client, plan):
    response = admin_client.post("/admin/runs/evaluationrun/launch/", {"agent_id": "b" * 24,
                                                                       "test_set_id": str(TEST_SET), "concurrency": 3})
    assert response.status_code == 200 and b"No bot with agent_id" in response.content
    assert EvaluationRun.objects.count() == 0


def test_cancel_action(admin_client, plan, monkeypatch):
    from apps.runs import services

    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    run = services.run_create(agent_id=AGENT, test_set_id=TEST_SET, judge_model="heuristic")
    admin_client.post("/admin/runs/evaluationrun/", {"action": "cancel_runs", "_selected_action": [run.pk]})
    assert EvaluationRun.objects.get(pk=run.pk).status == "cancelled"
