"""Runs over the real demo bot, knowledge base, rubric, test set and question set (no stand-ins)."""

import copy

import pytest
from django.core.management import CommandError, call_command

from apps.bots.demo import DEMO_AGENT_ID
from apps.rubrics.demo import DEMO_RUBRIC_ID
from apps.runs.demo import load_demo_evaluation_data
from apps.runs.models import EvaluationRun
from apps.testsets.demo import DEMO_DATASET_ID, DEMO_TEST_SET, DEMO_TEST_SET_ID
from apps.testsets.models import TestSet
from apps.testsets.schemas import TestSetContent
from apps.testsets.services import testset_publish_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    load_demo_evaluation_data()


def test_demo_run_through_the_api(api, demo, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/runs", {"agent_id": DEMO_AGENT_ID, "test_set_id": DEMO_TEST_SET_ID,
                                            "rubric_id": DEMO_RUBRIC_ID, "concurrency": 2}, format="json")
    assert created.status_code == 201, created.json()
    run = api.get(f"/api/v1/runs/{created.json()['run_id']}").json()
    assert run["status"] == "completed" and run["total"] == run["completed"] == 5
    assert (run["test_set_version"], run["rubric_version"]) == (1, 1)
    assert run["judge"] == "heuristic:v1" and run["bot_llm_model"]
    # Issue 20: the offline judge can check none of the demo rubric's prose conditions: all 25 rule
    # verdicts are skipped, outside passed/total (it used to count parts of rules as checked).
    assert run["criteria_total"] > 0 and (run["rubric_rules_total"], run["rubric_rules_skipped"]) == (0, 25)
    assert set(run["component_scores"]) <= {"prompt", "knowledge_base", "function", "general"}

    results = {r["item_name"]: r for r in api.get(f"/api/v1/runs/{run['run_id']}/results").json()}
    assert len(results) == 5
    pto = results["PTO Policy Inquiry"]
    assert "15 days per year" in pto["output"]["messages"][1]["content"]
    # Issue 20: its prose criteria used to pass by proxy (a look-up with results; 60% of the words).
    # The offline judge checks the tool expectations and skips the prose for an LLM judge.
    verdicts = {c["criterion"]: c for c in pto["criteria_scores"]}
    assert {k: (v["status"], v["passed"]) for k, v in verdicts.items()} == {
        "Agent retrieves PTO policy from knowledge base": ("skipped", None),
        "Response includes the accrual rate of 15 days per year": ("skipped", None),
        "Uses tool search_kb": ("ok", True), "Does not use tool live_handoff": ("ok", True)}
    assert verdicts["Agent retrieves PTO policy from knowledge base"]["reasoning"].startswith("needs an LLM judge")
    assert pto["criteria_passed"] is False and pto["outcome"] == "unassessed"
    handoff = results["Ask for a Person"]
    assert handoff["output"]["messages"][1]["tool_calls"][0]["name"] == "live_handoff"
    # A hand-off is checked mechanically.
    assert handoff["criteria_passed"] is True, handoff["criteria_scores"]
    scenario = results["PTO Carry-over Conversation"]
    assert [m["role"] for m in scenario["output"]["messages"]] == ["user", "assistant"] * 3
    for result in results.values():
        assert result["passed"] == (result["criteria_passed"] and result["rubric_passed"] is not False)


def test_a_run_keeps_the_version_it_started_with(api, demo, monkeypatch, django_capture_on_commit_callbacks):
    from apps.runs import services

    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, concurrency=1)
    edited = copy.deepcopy(DEMO_TEST_SET)
    edited["items"][0]["inputs"]["message"] = "Edited after the run started"
    testset_publish_version(test_set=TestSet.objects.get(pk=DEMO_TEST_SET_ID),
                             content=TestSetContent.model_validate(edited), changelog="edit", author="t")
    first = run.results.get(position=0)
    with django_capture_on_commit_callbacks(execute=True):
        services.result_execute(result_pk=first.pk)
    first.refresh_from_db()
    assert first.input["message"] == "How many PTO days do I accrue per year?"
    assert EvaluationRun.objects.get(pk=run.pk).test_set_version == 1
    with django_capture_on_commit_callbacks(execute=True):
        newer = services.run_create(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID)
    assert newer.test_set_version == 2


def test_demo_question_set_run(api, demo, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/runs", {"agent_id": DEMO_AGENT_ID, "dataset_id": DEMO_DATASET_ID},
                           format="json")
    run = api.get(f"/api/v1/runs/{created.json()['run_id']}").json()
    assert run["status"] == "completed" and run["dataset_id"] == DEMO_DATASET_ID and run["test_set_id"] is None
    for result in api.get(f"/api/v1/runs/{run['run_id']}/results").json():
        assert result["criteria_scores"] is None and result["rubric_scores"] is None
        assert isinstance(result["scores"]["correctness"]["comment"], str)


# transaction=True: --wait polls inside call_command for a run that starts only when run_create's
# transaction commits (see tests/runs/test_cli.py).
@pytest.mark.django_db(transaction=True)
def test_cli_against_the_demo_bot(demo, capsys):
    """Issue 16, fail-closed: with the heuristic judge both high-severity demo rules are skipped on
    every item, so no item passes: all 5 are unassessed and the gate fails. This test used to pass
    with "5 passed", which was the bug. Issue 20: every demo rule's conditions are prose (premises,
    "unnecessary preamble", "invents an answer"), so the offline judge skips all 25 rule verdicts
    (it used to pass 2 of 5 on parts of them) and the prose criteria; it scores the 7 tool
    expectations and the hand-off criterion."""
    args = ("evalrun", "--agent", DEMO_AGENT_ID, "--test-set", DEMO_TEST_SET_ID, "--rubric", DEMO_RUBRIC_ID,
            "--wait", "--poll", "0.01", "--timeout", "60")
    with pytest.raises(CommandError, match="5 items unassessed"):
        call_command(*args)
    out = capsys.readouterr().out
    assert "completed: 5/5 done, 0 passed, 0 failed, 5 unassessed" in out and "rubric rules: 0/0 passed" in out
    assert "verdicts    : 8 scored, 32 skipped, 0 errored" in out and "criteria    : 8/15 passed" in out
    assert "UNASSESSED PTO Policy Inquiry" in out
    assert "rule GROUNDED_IN_HANDBOOK (high) skipped — needs an LLM judge" in out
    call_command(*args, "--allow-unassessed")
    assert "completed: 5/5 done" in capsys.readouterr().out
