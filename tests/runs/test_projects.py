"""Projects: a key acts in its own project only. Project A holds a bot, a rubric, a test set, a
question set and a run; a key of project B (an admin there, so every scope) tries to read, edit,
delete, launch against and cancel each of them. Every attempt answers 404, as for an id that does
not exist (so existence does not leak), nothing of A changes, and B's lists show nothing of A."""

import uuid

import pytest

from apps.bots.models import Bot
from apps.rubrics.models import Rubric
from apps.runs.models import EvaluationRun
from apps.testsets.models import Dataset, TestSet
from tests.bots.factories import BotFactory
from tests.core.factories import ProjectFactory, project_key_client
from tests.rubrics.factories import RubricFactory, rubric_body
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory
from tests.testsets.factories import DatasetFactory, SuiteFactory, make_test_set_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def a():
    """Project A's objects: a bot with a tool, its rubric, test set and question set, and a run
    (running, so there is something to cancel) with a result."""
    project = ProjectFactory(slug="team-a", name="Team A")
    bot = BotFactory(project=project, name="A's secret bot", tool_names=["a_only_tool"])
    rubric = RubricFactory(bot=bot, name="A's rubric")
    test_set = SuiteFactory(bot=bot, name="A's test set")
    dataset = DatasetFactory(bot=bot, name="A's question set")
    run = EvaluationRunFactory(
        project=project,
        agent_id=bot.agent_id,
        test_set_id=test_set.pk,
        rubric_id=rubric.pk,
        status=EvaluationRun.Status.RUNNING,
        label="A's run",
    )
    result = EvaluationResultFactory(run=run)
    return {
        "project": project,
        "bot": bot,
        "rubric": rubric,
        "test_set": test_set,
        "dataset": dataset,
        "run": run,
        "result": result,
    }


@pytest.fixture
def b():
    """A key of project B held by B's admin: every scope, in B only."""
    project = ProjectFactory(slug="team-b", name="Team B")
    client = project_key_client(project)
    client.project = project
    return client


def test_b_reads_nothing_of_a(a, b):
    agent_id, rubric_id, test_set_id = a["bot"].agent_id, a["rubric"].pk, a["test_set"].pk
    run_id, result_id = a["run"].run_id, a["result"].result_id
    for path in [
        f"/api/v1/bots/{agent_id}",
        f"/api/v1/bots/{agent_id}/context",
        f"/api/v1/rubrics/{rubric_id}",
        f"/api/v1/rubrics/{rubric_id}/versions",
        f"/api/v1/rubrics/{rubric_id}/versions/1",
        f"/api/v1/test-sets/{test_set_id}",
        f"/api/v1/test-sets/{test_set_id}/versions",
        f"/api/v1/test-sets/{test_set_id}/versions/1",
        f"/api/v1/test-sets/{test_set_id}/export?format=csv",
        f"/api/v1/datasets/{a['dataset'].pk}",
        f"/api/v1/runs/{run_id}",
        f"/api/v1/runs/{run_id}/results",
        f"/api/v1/runs/{run_id}/results?limit=10",
        f"/api/v1/runs/{run_id}/items",
        f"/api/v1/results/{result_id}",
        f"/api/v1/results/{result_id}/reviews",
    ]:
        response = b.get(path)
        assert response.status_code == 404, path
        # Worded as for an id that does not exist: nothing of A's in the answer.
        assert "A's" not in response.content.decode(), path


def test_b_lists_show_nothing_of_a(a, b):
    for path in ["/api/v1/bots", "/api/v1/rubrics", "/api/v1/test-sets", "/api/v1/datasets", "/api/v1/runs"]:
        response = b.get(path)
        assert response.status_code == 200 and response.json() == [], path
    # Filtering on A's bot is as filtering on a bot that does not exist.
    for path in ["/api/v1/rubrics", "/api/v1/test-sets", "/api/v1/datasets"]:
        assert b.get(f"{path}?agent_id={a['bot'].agent_id}").status_code == 404, path
    assert b.get(f"/api/v1/runs?agent_id={a['bot'].agent_id}").json() == []


def test_b_edits_and_deletes_nothing_of_a(a, b):
    bot, rubric, test_set, dataset = a["bot"], a["rubric"], a["test_set"], a["dataset"]
    bot_body = {"name": "taken over", "agent_id": bot.agent_id}
    assert b.put(f"/api/v1/bots/{bot.agent_id}", bot_body, format="json").status_code == 404
    assert b.delete(f"/api/v1/bots/{bot.agent_id}").status_code == 404
    assert b.put(f"/api/v1/rubrics/{rubric.pk}", rubric_body(bot.agent_id), format="json").status_code == 404
    assert b.delete(f"/api/v1/rubrics/{rubric.pk}").status_code == 404
    body = make_test_set_payload(bot.agent_id)
    assert b.put(f"/api/v1/test-sets/{test_set.pk}", body, format="json").status_code == 404
    assert b.delete(f"/api/v1/test-sets/{test_set.pk}").status_code == 404
    csv = b"type,name,message\nsingle_turn,x,hello\n"
    imported = b.post(f"/api/v1/test-sets/{test_set.pk}/import?format=csv", csv, content_type="text/csv")
    assert imported.status_code == 404
    question_set = {"name": "taken over", "questions": [{"question": "q"}]}
    assert b.put(f"/api/v1/datasets/{dataset.pk}", question_set, format="json").status_code == 404
    assert b.delete(f"/api/v1/datasets/{dataset.pk}").status_code == 404
    review = {"kind": "criterion", "key": "x", "passed": True}
    assert b.post(f"/api/v1/results/{a['result'].result_id}/reviews", review, format="json").status_code == 404
    # Nothing of A changed.
    bot.refresh_from_db(), rubric.refresh_from_db(), test_set.refresh_from_db(), dataset.refresh_from_db()
    assert bot.name == "A's secret bot" and rubric.current_version == 1 and test_set.current_version == 1
    assert dataset.name == "A's question set"
    assert Bot.objects.filter(project=a["project"]).count() == 1


def test_b_cannot_build_on_a_s_bot(a, b):
    """A rubric, test set or question set of B that names A's bot: the body names no bot of B (422),
    and the test set's warnings do not list A's bot's tools."""
    agent_id = a["bot"].agent_id
    assert b.post("/api/v1/rubrics", rubric_body(agent_id), format="json").status_code == 422
    assert b.post("/api/v1/test-sets", make_test_set_payload(agent_id), format="json").status_code == 422
    question_set = {"name": "q", "agent_id": agent_id, "questions": [{"question": "q"}]}
    assert b.post("/api/v1/datasets", question_set, format="json").status_code == 422
    assert not Rubric.objects.filter(project=b.project).exists()
    assert not TestSet.objects.filter(project=b.project).exists()
    assert not Dataset.objects.filter(project=b.project).exists()


def test_b_launches_nothing_of_a(a, b):
    """A run is of one project: B's key naming A's bot, test set, question set or rubric, or B's
    bot with A's test set or rubric, is a 404, and no run is made."""
    own_bot = BotFactory(project=b.project)
    own_test_set = SuiteFactory(bot=own_bot)
    attempts = [
        {"agent_id": a["bot"].agent_id, "test_set_id": str(a["test_set"].pk)},
        {"agent_id": a["bot"].agent_id, "test_set_id": str(own_test_set.pk)},
        {"agent_id": own_bot.agent_id, "test_set_id": str(a["test_set"].pk)},
        {"agent_id": own_bot.agent_id, "dataset_id": str(a["dataset"].pk)},
        {"agent_id": own_bot.agent_id, "test_set_id": str(own_test_set.pk), "rubric_id": str(a["rubric"].pk)},
    ]
    for body in attempts:
        response = b.post("/api/v1/runs", {**body, "judge_model": "heuristic"}, format="json")
        assert response.status_code == 404, body
    assert not EvaluationRun.objects.filter(project=b.project).exists()
    # The same launch within B is fine: the refusals above are about the project, not the body.
    body = {"agent_id": own_bot.agent_id, "test_set_id": str(own_test_set.pk), "judge_model": "heuristic"}
    assert b.post("/api/v1/runs", body, format="json").status_code == 201
    assert EvaluationRun.objects.get(project=b.project).agent_id == own_bot.agent_id


def test_b_cancels_and_compares_nothing_of_a(a, b):
    run = a["run"]
    assert b.post(f"/api/v1/runs/{run.run_id}/cancel").status_code == 404
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.RUNNING
    own_run = EvaluationRunFactory(project=b.project, test_set_id=a["test_set"].pk)
    assert b.get(f"/api/v1/runs/{own_run.run_id}/compare/{run.run_id}").status_code == 404
    assert b.get(f"/api/v1/runs/{run.run_id}/compare/{own_run.run_id}").status_code == 404


def test_the_same_agent_id_in_two_projects_is_two_bots(a, b):
    """A client chooses agent_ids: unique per project, so B learns nothing from a conflict with A."""
    agent_id = a["bot"].agent_id
    response = b.post("/api/v1/bots", {"name": "B's bot", "agent_id": agent_id}, format="json")
    assert response.status_code == 201
    assert b.get(f"/api/v1/bots/{agent_id}").json()["name"] == "B's bot"
    assert Bot.objects.get(project=a["project"], agent_id=agent_id).name == "A's secret bot"
    # A second one in B is the conflict it always was.
    again = b.post("/api/v1/bots", {"name": "again", "agent_id": agent_id}, format="json")
    assert again.status_code == 409


def test_a_run_executes_with_its_own_project_s_bot(settings):
    """The engine looks the run's bot up in the run's project: two projects with a bot of the same
    agent_id each run their own (the run's snapshot names the bot it ran)."""
    one, two = ProjectFactory(slug="one"), ProjectFactory(slug="two")
    agent_id = "c" * 24
    bots = {p: BotFactory(project=p, agent_id=agent_id, name=f"bot of {p.slug}") for p in (one, two)}
    for project in (one, two):
        client = project_key_client(project)
        test_set = SuiteFactory(bot=bots[project])
        body = {"agent_id": agent_id, "test_set_id": str(test_set.pk), "judge_model": "heuristic"}
        response = client.post("/api/v1/runs", body, format="json")
        assert response.status_code == 201
        run = EvaluationRun.objects.get(run_id=uuid.UUID(response.json()["run_id"]))
        assert run.project == project and run.bot_snapshot["name"] == f"bot of {project.slug}"


@pytest.mark.parametrize("slug", ["default", "elsewhere"])
def test_the_evaluation_contract_works_with_a_key_of_any_project(slug, django_capture_on_commit_callbacks):
    """A contract client never names a project: the seed's flow (bot, rubric, test set, run, its
    results, items and the comparison with the previous run) answers the same with a key of
    `default` and of any other project. Another project holds a bot of the same agent_id, which the
    run must not reach."""
    project = ProjectFactory(slug=slug, name=slug.title())
    other = ProjectFactory(slug="other-team")
    agent_id = "d" * 24
    BotFactory(project=other, agent_id=agent_id, name="the other team's bot")
    client = project_key_client(project)
    assert client.post("/api/v1/bots", {"name": "ours", "agent_id": agent_id}, format="json").status_code == 201
    assert client.get(f"/api/v1/bots/{agent_id}/context").json()["bot_name"] == "ours"
    rubric = client.post("/api/v1/rubrics", rubric_body(agent_id), format="json")
    test_set = client.post("/api/v1/test-sets", make_test_set_payload(agent_id), format="json")
    assert rubric.status_code == 201 and test_set.status_code == 201
    body = {
        "agent_id": agent_id,
        "test_set_id": test_set.json()["test_set_id"],
        "rubric_id": rubric.json()["rubric_id"],
        "judge_model": "heuristic",
    }
    run_ids = []
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            created = client.post("/api/v1/runs", body, format="json")
        assert created.status_code == 201, created.json()
        run_ids.append(created.json()["run_id"])
    run = client.get(f"/api/v1/runs/{run_ids[1]}").json()
    assert run["status"] == "completed" and run["total"] == 2
    results = client.get(f"/api/v1/runs/{run_ids[1]}/results").json()
    assert len(results) == 2 and {r["run_id"] for r in results} == {run_ids[1]}
    assert client.get(f"/api/v1/runs/{run_ids[1]}/items").status_code == 200
    compared = client.get(f"/api/v1/runs/{run_ids[0]}/compare/{run_ids[1]}")
    assert compared.status_code == 200
    stored = EvaluationRun.objects.get(run_id=uuid.UUID(run_ids[1]))
    assert stored.project == project and stored.bot_snapshot["name"] == "ours"
    assert [r["run_id"] for r in client.get("/api/v1/runs").json()] == run_ids[::-1]
