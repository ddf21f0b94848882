"""The `review` scope: a reviewer does a reviewer's work over the API, with a key or a session, and
nothing more. Before it, human reviews needed `configure` (an editor's) and queue writes a staff
account, so a reviewer's key only read. Each test performs what a role may or may not do and checks
the status and the rows left behind."""

import importlib

import pytest
from django.apps import apps as django_apps
from rest_framework.test import APIClient

from apps.agentic.models import EvaluationRule
from apps.bots.models import Bot
from apps.core.auth.authentication import api_key_cache
from apps.core.models import ALL_SCOPES, ROLE_SCOPES, ApiKey, ProjectRole
from apps.core.projects.services import membership_set
from apps.core.services import api_key_create
from apps.queues.models import QueueItem, ReviewQueue
from apps.rubrics.models import Rubric
from apps.runs.models import EvaluationRun
from apps.scores.models import Score
from apps.scores.vocabulary import ScoreSource
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import ApiKeyFactory, MembershipFactory, ProjectFactory, UserFactory, client_with_key
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory, reviewable_result
from tests.runs.factories import EvaluationRunFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db
QUEUES = "/api/v1/queues"
RULE = {"name": "nightly", "agent_name": "", "source": "any", "sample_rate": 1, "judge": "heuristic"}
VERDICT = {"kind": "rule", "key": "USES_KB", "passed": True, "note": "the handbook was used"}


@pytest.fixture
def team():
    project = ProjectFactory(slug="team", name="Team")
    run = EvaluationRunFactory(project=project)
    result = reviewable_result(run=run)
    queue = ReviewQueueFactory(project=project, name="triage", include_unassessed=True)
    item = QueueItemFactory(queue=queue, subject=result)
    trace = AgentTraceFactory(project=project)
    evaluation = AgentEvaluationFactory(trace=trace, project=project)
    metric_queue = ReviewQueueFactory(project=project, name="agentic", kind="agentic_evaluation")
    metric_item = QueueItemFactory(queue=metric_queue, subject=evaluation)
    return {
        "project": project,
        "run": run,
        "result": result,
        "queue": queue,
        "item": item,
        "metric_queue": metric_queue,
        "metric_item": metric_item,
    }


def _member(project, role, username):
    user = UserFactory(username=username, password=None)
    MembershipFactory(project=project, user=user, role=role)
    return user


def key_client(project, role, username=None) -> APIClient:
    """A key made with every scope its owner's role allows (what a member gets by asking for all)."""
    user = _member(project, role, username or f"{role}-key")
    scopes = [s for s in ALL_SCOPES if s in ROLE_SCOPES[role]]
    client = client_with_key(ApiKeyFactory(user=user, project=project, scopes=scopes))
    client.user = user
    return client


def session_client(project, role, username=None) -> APIClient:
    user = _member(project, role, username or f"{role}-session")
    client = APIClient()
    client.force_login(user)
    client.user = user
    return client


def human_scores():
    return Score.objects.filter(source=ScoreSource.HUMAN)


def lacks(response, scope, holder="API key"):
    return response.status_code == 403 and response.json() == {"detail": f"This {holder} lacks the '{scope}' scope."}


# --- a reviewer reviews and works queues, with a key and with a session ----------------------------


@pytest.mark.parametrize("make_client", [key_client, session_client], ids=["key", "session"])
def test_a_reviewer_reviews_verdicts_and_metrics_and_works_queues(team, make_client):
    reviewer = make_client(team["project"], ProjectRole.REVIEWER)
    result, queue, item = team["result"], team["queue"], team["item"]

    posted = reviewer.post(f"/api/v1/results/{result.result_id}/reviews", VERDICT, format="json")
    assert posted.status_code == 201, posted.content
    assert posted.json()["reviewer"] == reviewer.user.username
    assert human_scores().filter(key="USES_KB", passed=True).count() == 1

    # Queue work: claim, review (a verdict and an agentic metric), assign.
    claimed = reviewer.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/claim")
    assert claimed.status_code == 200, claimed.content
    reviewed = reviewer.post(
        f"{QUEUES}/{queue.pk}/items/{item.pk}/review",
        {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": False}], "note": "second look"},
        format="json",
    )
    assert reviewed.status_code == 200, reviewed.content
    item.refresh_from_db()
    assert item.done_at is not None and item.reviewed_by == reviewer.user
    metric_queue, metric_item = team["metric_queue"], team["metric_item"]
    scored = reviewer.post(
        f"{QUEUES}/{metric_queue.pk}/items/{metric_item.pk}/review",
        {"verdicts": [{"key": "task_adherence", "score": 0.4}]},
        format="json",
    )
    assert scored.status_code == 200, scored.content
    assert human_scores().get(key="task_adherence").value == 0.4
    assigned = reviewer.post(
        f"{QUEUES}/{metric_queue.pk}/items/{metric_item.pk}/assign", {"username": reviewer.user.username}, format="json"
    )
    assert assigned.status_code == 200 and assigned.json()["assigned_to"] == reviewer.user.username

    # Queues themselves: create, edit, fill, add an item by hand.
    created = reviewer.post(QUEUES, {"name": "mine", "kind": "run_result", "include_unassessed": True}, format="json")
    assert created.status_code == 201, created.content
    queue_id = created.json()["id"]
    edited = reviewer.put(
        f"{QUEUES}/{queue_id}",
        {"name": "mine, renamed", "kind": "run_result", "include_unassessed": True},
        format="json",
    )
    assert edited.status_code == 200 and ReviewQueue.objects.get(pk=queue_id).name == "mine, renamed"
    assert reviewer.post(f"{QUEUES}/{queue_id}/fill").json() == {"entered": 1, "total": 1}
    other = reviewer.post(QUEUES, {"name": "by hand", "kind": "run_result"}, format="json").json()
    added = reviewer.post(f"{QUEUES}/{other['id']}/items", {"target_id": str(result.result_id)}, format="json")
    assert added.status_code == 201
    # Deleting a queue is an admin's, as every DELETE.
    holder = "API key" if make_client is key_client else "account"
    assert lacks(reviewer.delete(f"{QUEUES}/{queue_id}"), "admin", holder)
    assert ReviewQueue.objects.filter(pk=queue_id).exists()


@pytest.mark.parametrize("make_client", [key_client, session_client], ids=["key", "session"])
def test_a_reviewer_touches_no_bot_rubric_rule_or_run(team, make_client):
    reviewer = make_client(team["project"], ProjectRole.REVIEWER)
    holder = "API key" if make_client is key_client else "account"
    run = team["run"]
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
    for method, path, body, scope in [
        ("post", "/api/v1/bots", {"name": "b", "adapter": "http", "endpoint_url": "http://127.0.0.1:9/"}, "configure"),
        ("post", "/api/v1/rubrics", {"name": "r", "agent_id": "x", "rules": []}, "configure"),
        ("post", "/api/v1/evaluation-rules", RULE, "configure"),
        ("post", "/api/v1/runs", {}, "evaluate"),
        ("post", f"/api/v1/runs/{run.run_id}/cancel", None, "evaluate"),
        ("post", "/api/v1/metrics/traces", {}, "ingest"),
    ]:
        response = getattr(reviewer, method)(path, body, format="json")
        assert lacks(response, scope, holder), (path, response.status_code, response.content)
    assert not Bot.objects.exists() and not Rubric.objects.exists() and not EvaluationRule.objects.exists()
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.RUNNING and EvaluationRun.objects.count() == 1


def test_a_reviewer_of_another_project_reviews_nothing_here(team):
    outsider = key_client(ProjectFactory(slug="elsewhere"), ProjectRole.REVIEWER, "elsewhere-reviewer")
    result, queue, item = team["result"], team["queue"], team["item"]
    assert outsider.post(f"/api/v1/results/{result.result_id}/reviews", VERDICT, format="json").status_code == 404
    for action, body in [
        ("claim", None),
        ("review", {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": True}]}),
        ("assign", {"username": "elsewhere-reviewer"}),
    ]:
        response = outsider.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/{action}", body, format="json")
        assert response.status_code == 404, action
    assert (
        outsider.put(f"{QUEUES}/{queue.pk}", {"name": "mine", "kind": "run_result"}, format="json").status_code == 404
    )
    assert not human_scores().exists()
    item.refresh_from_db()
    assert item.assigned_to is None and item.done_at is None
    assert ReviewQueue.objects.get(pk=queue.pk).name == "triage"


@pytest.mark.parametrize("make_client", [key_client, session_client], ids=["key", "session"])
def test_a_viewer_reads_but_does_not_review(team, make_client):
    viewer = make_client(team["project"], ProjectRole.VIEWER)
    holder = "API key" if make_client is key_client else "account"
    result, queue, item = team["result"], team["queue"], team["item"]
    assert viewer.get(f"/api/v1/results/{result.result_id}/reviews").status_code == 200
    assert viewer.get(f"{QUEUES}/{queue.pk}/items").status_code == 200
    assert lacks(viewer.post(f"/api/v1/results/{result.result_id}/reviews", VERDICT, format="json"), "review", holder)
    assert lacks(viewer.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/claim"), "review", holder)
    assert lacks(viewer.post(QUEUES, {"name": "x", "kind": "run_result"}, format="json"), "review", holder)
    assert not human_scores().exists() and ReviewQueue.objects.count() == 2


def test_a_viewer_key_cannot_be_made_with_review(team):
    user = _member(team["project"], ProjectRole.VIEWER, "vic")
    with pytest.raises(Exception, match="cannot hold review: vic is viewer"):
        api_key_create(username=user.username, scopes=["read", "review"], project=team["project"])


def test_demoting_a_reviewer_takes_review_from_their_key_at_the_next_request(team, settings):
    settings.EVALSITE_API_KEY_CACHE_SECONDS = 60  # the cached key must not outlive the demotion
    api_key_cache.clear()
    reviewer = key_client(team["project"], ProjectRole.REVIEWER, "rita")
    url = f"/api/v1/results/{team['result'].result_id}/reviews"
    assert reviewer.post(url, VERDICT, format="json").status_code == 201
    membership_set(project=team["project"], username="rita", role=ProjectRole.VIEWER)
    assert lacks(reviewer.post(url, VERDICT, format="json"), "review")
    assert lacks(reviewer.post(f"{QUEUES}/{team['queue'].pk}/items/{team['item'].pk}/claim"), "review")
    assert human_scores().count() == 1
    # The key still holds `review` as stored: promoting her back gives it back, nobody edits the key.
    assert "review" in ApiKey.objects.get(user__username="rita").scopes
    membership_set(project=team["project"], username="rita", role=ProjectRole.REVIEWER)
    assert reviewer.post(url, VERDICT, format="json").status_code == 201
    api_key_cache.clear()


# --- editors and admins keep working -----------------------------------------------------------------


@pytest.mark.parametrize("role", [ProjectRole.EDITOR, ProjectRole.ADMIN])
def test_editors_and_admins_review_work_queues_and_configure_rules(team, role):
    member = key_client(team["project"], role)
    result, queue, item = team["result"], team["queue"], team["item"]
    assert member.post(f"/api/v1/results/{result.result_id}/reviews", VERDICT, format="json").status_code == 201
    assert member.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/claim").status_code == 200
    assert member.post(QUEUES, {"name": "theirs", "kind": "run_result"}, format="json").status_code == 201
    # Online evaluation rules are editor work: the role decides, not the staff flag.
    assert not member.user.is_staff
    created = member.post("/api/v1/evaluation-rules", RULE, format="json")
    assert created.status_code == 201, created.content
    rule_id = created.json()["id"]
    assert (
        member.put(f"/api/v1/evaluation-rules/{rule_id}", {**RULE, "enabled": False}, format="json").status_code == 200
    )
    assert EvaluationRule.objects.get(pk=rule_id).enabled is False
    deleted = member.delete(f"{QUEUES}/{queue.pk}")
    assert deleted.status_code == (204 if role == ProjectRole.ADMIN else 403)
    assert ReviewQueue.objects.filter(pk=queue.pk).exists() == (role != ProjectRole.ADMIN)


def test_an_editor_session_configures_rules_without_staff(team):
    editor = session_client(team["project"], ProjectRole.EDITOR)
    assert editor.post("/api/v1/evaluation-rules", RULE, format="json").status_code == 201
    assert EvaluationRule.objects.get().project == team["project"]


# --- the scope map, the migration and the command ----------------------------------------------------


def test_roles_hold_review_from_reviewer_up():
    assert "review" in ALL_SCOPES
    assert ROLE_SCOPES[ProjectRole.VIEWER] == {"read"}
    assert ROLE_SCOPES[ProjectRole.REVIEWER] == {"read", "review"}
    assert {"review", "configure"} <= ROLE_SCOPES[ProjectRole.EDITOR] and "admin" not in ROLE_SCOPES[ProjectRole.EDITOR]
    assert ROLE_SCOPES[ProjectRole.ADMIN] == set(ALL_SCOPES)


def test_migration_gives_review_to_every_key_that_holds_configure():
    migration = importlib.import_module("apps.core.migrations.0008_apikey_review_scope")
    configurer, _ = api_key_create(username="etl", scopes=["read", "configure"])
    everything, _ = api_key_create(username="root", staff=True)
    plain, _ = api_key_create(username="ci-bot")
    ApiKey.objects.filter(pk=everything.pk).update(scopes=["read", "ingest", "evaluate", "configure", "admin"])
    migration.grant_review_with_configure(django_apps, None)
    configurer.refresh_from_db(), everything.refresh_from_db(), plain.refresh_from_db()
    assert configurer.scopes == ["read", "review", "configure"]
    assert everything.scopes == ["read", "ingest", "evaluate", "review", "configure", "admin"]
    # No configure, no review: a key that could not review before cannot now.
    assert plain.scopes == ["read", "ingest", "evaluate"]
    migration.grant_review_with_configure(django_apps, None)  # again: nothing changes
    configurer.refresh_from_db()
    assert configurer.scopes == ["read", "review", "configure"]
    migration.take_review_back(django_apps, None)
    configurer.refresh_from_db()
    assert configurer.scopes == ["read", "configure"]


def test_the_command_lists_and_grants_review(capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandParser

    from apps.core.management.commands.create_api_key import Command

    parser = CommandParser()
    Command().add_arguments(parser)
    assert "review" in parser.format_help()
    team = ProjectFactory(slug="reviews")
    _member(team, ProjectRole.REVIEWER, "rosa")
    call_command("create_api_key", "--user", "rosa", "--project", "reviews", "--scopes", "review,read")
    raw = capsys.readouterr().out.strip()
    assert ApiKey.objects.get(user__username="rosa").scopes == ["read", "review"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.post(QUEUES, {"name": "rosa's", "kind": "run_result"}, format="json").status_code == 201
    assert QueueItem.objects.count() == 0
