"""Issue 15: runs carry an optional label, and a snapshot of their bot's configuration taken when
they are created, so two runs can be told apart and a comparison can say what changed in the bot."""

import hashlib
from dataclasses import replace

import pytest
from django.core.management import call_command

from apps.bots.demo import DEMO_AGENT_ID
from apps.bots.models import BotTool, KnowledgeDocument
from apps.bots.selectors import bot_config_snapshot, bot_snapshot_changes
from apps.core.errors import InvalidInputError
from apps.core.models import Project
from apps.runs import services
from apps.runs.demo import load_demo_evaluation_data
from apps.runs.models import EvaluationRun
from apps.runs.schemas import RunCreateIn
from apps.testsets.demo import DEMO_TEST_SET_ID
from tests.bots.factories import HANDBOOK, SECRET, make_bot_spec
from tests.runs.factories import PLAN_AGENT, PLAN_TEST_SET, EvaluationRunFactory
from tests.runs.test_api import start

pytestmark = pytest.mark.django_db


def test_label_round_trip_through_the_api(api, plan):
    created = start(api, label="  after removing the PTO doc ")
    assert created.status_code == 201, created.json()
    assert created.json()["label"] == "after removing the PTO doc"
    run_id = created.json()["run_id"]
    assert api.get(f"/api/v1/runs/{run_id}").json()["label"] == "after removing the PTO doc"
    assert api.get(f"/api/v1/runs?agent_id={PLAN_AGENT}").json()[0]["label"] == "after removing the PTO doc"
    unlabelled = start(api)
    assert unlabelled.json()["label"] == ""


@pytest.mark.parametrize("label", ["x" * 201, 12, None, ["a"]])
def test_label_must_be_a_short_string(api, plan, label):
    response = start(api, label=label)
    assert response.status_code == 422, response.json()
    assert not EvaluationRun.objects.exists()


def test_the_service_refuses_a_long_label_from_any_caller(plan):
    with pytest.raises(InvalidInputError, match="label"):
        services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(agent_id=PLAN_AGENT, test_set_id=PLAN_TEST_SET, label="x" * 201),
        )


def test_the_api_answers_the_bot_snapshot_without_the_secret(api, plan):
    plan["bot"] = make_bot_spec(
        system_prompt="Be brief.",
        llm_provider="openai",
        llm_model="gpt-4o-mini",
        llm_parameters={"temperature": 0.2},
        secret=SECRET,
    )
    run = start(api).json()
    snapshot = run["bot_snapshot"]
    assert snapshot["system_prompt"] == "Be brief." and snapshot["llm_model"] == "gpt-4o-mini"
    assert snapshot["llm_parameters"] == {"temperature": 0.2}
    assert [t["tool_name"] for t in snapshot["tools"]] == ["search_kb", "live_handoff"]
    assert snapshot["documents"][0] == {
        "knowledge_base": "HR Handbook",
        "title": "PTO Policy",
        "sha256": hashlib.sha256(HANDBOOK[0].text.encode()).hexdigest(),
    }
    assert SECRET not in str(run)


def test_runs_older_than_snapshots_answer_null(api):
    run = EvaluationRunFactory()
    assert api.get(f"/api/v1/runs/{run.run_id}").json()["bot_snapshot"] is None


def test_snapshot_content_hashes_follow_the_documents():
    snapshot = bot_config_snapshot(make_bot_spec())
    assert "secret" not in snapshot and "text" not in snapshot["documents"][0]
    edited = make_bot_spec(documents=(replace(HANDBOOK[0], text=HANDBOOK[0].text + " Edited."), HANDBOOK[1]))
    changed = bot_config_snapshot(edited)
    assert changed["documents"][0]["sha256"] != snapshot["documents"][0]["sha256"]
    assert changed["documents"][1]["sha256"] == snapshot["documents"][1]["sha256"]
    assert bot_snapshot_changes(snapshot, changed) == [
        {"what": "document", "change": "changed", "detail": "PTO Policy (HR Handbook): content differs"}
    ]


def test_changes_between_two_snapshots():
    before = bot_config_snapshot(
        make_bot_spec(
            system_prompt="Be brief.",
            llm_provider="openai",
            llm_model="a",
            llm_parameters={"temperature": 0.2, "top_p": 1},
        )
    )
    after = bot_config_snapshot(
        make_bot_spec(
            system_prompt="Be thorough.",
            llm_provider="openai",
            llm_model="b",
            llm_parameters={"temperature": 0.7, "seed": 1},
            tools=make_bot_spec().tools[:1],
            documents=HANDBOOK[1:],
        )
    )
    changes = {(c["what"], c["change"], c["detail"]) for c in bot_snapshot_changes(before, after)}
    assert changes == {
        ("prompt", "changed", "9 → 12 characters"),
        ("model", "changed", "openai a → openai b"),
        ("parameter", "changed", "temperature: 0.2 → 0.7"),
        ("parameter", "removed", "top_p (was 1)"),
        ("parameter", "added", "seed = 1"),
        ("tool", "removed", "live_handoff"),
        ("document", "removed", "PTO Policy (HR Handbook)"),
    }
    assert bot_snapshot_changes(before, before) == []
    assert bot_snapshot_changes({}, after) == [], "no snapshot: unknown, not everything added"


def test_run_create_snapshots_the_real_bot_and_rerun_takes_a_new_one(db, django_capture_on_commit_callbacks):
    """Through the real sources: deleting a knowledge-base document or a tool between two runs of
    the same versions shows in their snapshots, the first run's snapshot unchanged."""
    load_demo_evaluation_data()
    with django_capture_on_commit_callbacks(execute=False):
        first = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, label="baseline"),
        )
    titles = [d["title"] for d in first.bot_snapshot["documents"]]
    assert "PTO Policy" in titles and all(len(d["sha256"]) == 64 for d in first.bot_snapshot["documents"])
    KnowledgeDocument.objects.filter(title="PTO Policy").delete()
    BotTool.objects.filter(bot__agent_id=DEMO_AGENT_ID).first().delete()
    with django_capture_on_commit_callbacks(execute=False):
        second = services.run_rerun(run=first, label="without PTO")
    first.refresh_from_db()
    assert "PTO Policy" in [d["title"] for d in first.bot_snapshot["documents"]], "the old snapshot stays"
    assert "PTO Policy" not in [d["title"] for d in second.bot_snapshot["documents"]]
    assert second.label == "without PTO" and second.test_set_version == first.test_set_version
    kinds = {(c["what"], c["change"]) for c in bot_snapshot_changes(first.bot_snapshot, second.bot_snapshot)}
    assert {("document", "removed"), ("tool", "removed")} <= kinds


def test_evalrun_takes_a_label(db, capsys):
    load_demo_evaluation_data()
    call_command("evalrun", "--agent", DEMO_AGENT_ID, "--test-set", str(DEMO_TEST_SET_ID), "--label", "ci #42")
    assert EvaluationRun.objects.get().label == "ci #42"
