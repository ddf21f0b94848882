"""The console acts in the session's project (apps.core.projects.resolution.project_of): a person
who belongs to project B sees B's runs, queues, bots and test sets, never A's (lists, filter choices,
dashboard, compare choices), A's pages are 404, and what they may do follows their role in the
session's project: viewer reads; reviewer also reviews and works queues; editor also launches and
cancels. The header's switcher offers their own projects only and moves the session between them."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from apps.bots.models import Bot
from apps.core.models import ProjectRole
from apps.queues.models import ReviewQueue
from apps.runs.models import EvaluationRun
from apps.scores.models import Score
from apps.scores.vocabulary import ScoreSource
from tests.agentic.factories import AgentEvaluationFactory
from tests.bots.factories import BotFactory
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory, reviewable_result
from tests.rag.factories import TraceEvaluationFactory
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory
from tests.testsets.factories import SuiteFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def a():
    project = ProjectFactory(slug="team-a", name="Team Alpha")
    bot = BotFactory(project=project, name="AlphaBot")
    test_set = SuiteFactory(bot=bot, name="Alpha questions")
    rubric = RubricFactory(bot=bot, name="Alpha rubric")
    run = EvaluationRunFactory(
        project=project,
        agent_id=bot.agent_id,
        test_set_id=test_set.pk,
        rubric_id=rubric.pk,
        label="alpha-run",
        status=EvaluationRun.Status.RUNNING,
    )
    result = EvaluationResultFactory(run=run, item_name="alpha item")
    queue = ReviewQueueFactory(project=project, name="Alpha queue")
    item = QueueItemFactory(queue=queue, subject=result)
    return {"project": project, "run": run, "result": result, "rubric": rubric, "queue": queue, "item": item}


@pytest.fixture
def b():
    project = ProjectFactory(slug="team-b", name="Team Beta")
    bot = BotFactory(project=project, name="BetaBot")
    test_set = SuiteFactory(bot=bot, name="Beta questions")
    run = EvaluationRunFactory(project=project, agent_id=bot.agent_id, test_set_id=test_set.pk, label="beta-run")
    return {"project": project, "bot": bot, "test_set": test_set, "run": run}


def member_client(client, project, role, username=None):
    user = UserFactory(username=username or f"{project.slug}-{role}")
    MembershipFactory(project=project, user=user, role=role)
    client.force_login(user)
    return client


def test_b_s_member_sees_nothing_of_a(client, a, b):
    member_client(client, b["project"], ProjectRole.EDITOR)
    for path in ["/console/", "/console/runs/", "/console/runs/compare/", "/console/queues/", "/console/runs/new/"]:
        page = client.get(path).content.decode()
        for name in ("Team Alpha", "AlphaBot", "Alpha questions", "Alpha rubric", "alpha-run", "Alpha queue"):
            assert name not in page, (path, name)
    assert "beta-run" in client.get("/console/runs/").content.decode()
    run, result, queue, item = a["run"], a["result"], a["queue"], a["item"]
    for path in [
        f"/console/runs/{run.run_id}/",
        f"/console/runs/{run.run_id}/progress/",
        f"/console/runs/{run.run_id}/live/",
        f"/console/runs/{run.run_id}/export.csv",
        f"/console/runs/compare/?base={b['run'].run_id}&head={run.run_id}",
        f"/console/results/{result.result_id}/",
        f"/console/rubrics/{a['rubric'].pk}/",
        f"/console/queues/{queue.pk}/",
        f"/console/queues/{queue.pk}/review/",
        f"/console/queues/{queue.pk}/items/{item.pk}/",
    ]:
        assert client.get(path).status_code == 404, path
    for path in [f"/console/runs/{run.run_id}/cancel/", f"/console/runs/{run.run_id}/rerun/"]:
        assert client.post(path).status_code == 404, path
    run.refresh_from_db()
    assert (
        run.status == EvaluationRun.Status.RUNNING and EvaluationRun.objects.filter(project=a["project"]).count() == 1
    )


def test_the_switcher_offers_only_the_person_s_projects_and_moves_the_session(client, a, b):
    third = ProjectFactory(slug="team-c", name="Team Gamma")
    member_client(client, b["project"], ProjectRole.VIEWER, username="two-teams")
    MembershipFactory(project=third, user=_user(client), role=ProjectRole.VIEWER)
    page = client.get("/console/").content.decode()
    assert 'id="project-switcher"' in page and "Team Beta" in page and "Team Gamma" in page
    assert "Team Alpha" not in page
    # Another project's slug: as one that does not exist, and the session stays where it was.
    assert client.post("/console/project/", {"project": "team-a"}).status_code == 404
    assert client.post("/console/project/", {"project": "team-c"}).status_code == 302
    assert "beta-run" not in client.get("/console/runs/").content.decode()
    assert client.get(f"/console/runs/{b['run'].run_id}/").status_code == 404
    assert client.post("/console/project/", {"project": "team-b"}).status_code == 302
    assert client.get(f"/console/runs/{b['run'].run_id}/").status_code == 200


def _user(client):
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


def test_a_viewer_reads_but_neither_launches_nor_reviews(client, b):
    member_client(client, b["project"], ProjectRole.VIEWER)
    result = EvaluationResultFactory(run=b["run"])
    page = client.get("/console/").content.decode()
    assert "Launch a run" not in page
    assert client.get(f"/console/runs/{b['run'].run_id}/").status_code == 200
    assert client.get("/console/runs/new/").status_code == 403
    assert client.post(f"/console/runs/{b['run'].run_id}/rerun/").status_code == 403
    review = {"kind": "criterion", "key": "x", "passed": "true"}
    assert client.post(f"/console/results/{result.result_id}/", review).status_code == 403
    assert client.post("/console/queues/", {"name": "q", "kind": "run_result", "sample_percent": 0}).status_code == 403


def test_a_reviewer_reviews_and_works_queues_but_does_not_launch(client, b):
    member_client(client, b["project"], ProjectRole.REVIEWER)
    assert client.get("/console/runs/new/").status_code == 403
    assert client.post(f"/console/runs/{b['run'].run_id}/cancel/").status_code == 403
    created = client.post("/console/queues/", {"name": "Beta triage", "kind": "run_result", "sample_percent": 0})
    assert created.status_code == 302
    queue = ReviewQueue.objects.get(name="Beta triage")
    assert queue.project == b["project"]
    result = reviewable_result(run=b["run"])
    item = QueueItemFactory(queue=queue, subject=result)
    assert client.post(f"/console/queues/{queue.pk}/items/{item.pk}/claim/").status_code == 302
    item.refresh_from_db()
    assert item.assigned_to is not None


def test_a_reviewer_who_is_not_staff_gives_verdicts_on_result_pages_and_in_queues(client, b):
    """The console's review forms and queue work follow the role, never the staff flag (nor the
    `configure` scope, which a reviewer does not hold)."""
    member_client(client, b["project"], ProjectRole.REVIEWER)
    reviewer = _user(client)
    assert not reviewer.is_staff
    result = reviewable_result(run=b["run"])
    page = client.get(f"/console/results/{result.result_id}/").content.decode()
    assert 'name="passed"' in page, "the review form is offered"
    posted = client.post(f"/console/results/{result.result_id}/", {"kind": "rule", "key": "USES_KB", "passed": "true"})
    assert posted.status_code == 302
    assert Score.objects.filter(source=ScoreSource.HUMAN, key="USES_KB", passed=True, author=reviewer).exists()
    queue = ReviewQueueFactory(project=b["project"], name="Beta queue")
    item = QueueItemFactory(queue=queue, subject=reviewable_result(run=b["run"]))
    submitted = client.post(
        f"/console/queues/{queue.pk}/items/{item.pk}/",
        {"rows": "1", "v-0-kind": "rule", "v-0-key": "USES_KB", "v-0-passed": "fail", "note": "no KB"},
    )
    assert submitted.status_code == 302
    item.refresh_from_db()
    assert item.done_at is not None and item.reviewed_by == reviewer


def test_an_editor_launches_in_the_session_s_project(client, a, b, django_capture_on_commit_callbacks):
    member_client(client, b["project"], ProjectRole.EDITOR)
    page = client.get("/console/runs/new/").content.decode()
    assert "BetaBot" in page and "AlphaBot" not in page
    form = {"agent_id": b["bot"].agent_id, "test_set_id": str(b["test_set"].pk), "concurrency": 1, "repeats": 1}
    with django_capture_on_commit_callbacks():
        response = client.post("/console/runs/new/", form)
    assert response.status_code == 302
    assert EvaluationRun.objects.filter(project=b["project"]).count() == 2
    # A's test set is not a choice: the form refuses it, and nothing is launched in either project.
    foreign = {**form, "test_set_id": str(SuiteFactory(bot=BotFactory(project=a["project"])).pk)}
    assert client.post("/console/runs/new/", foreign).status_code == 200
    assert EvaluationRun.objects.count() == 3


def test_the_admin_lists_and_opens_only_the_session_s_project(client, a, b):
    user = UserFactory(username="beta-staff", is_staff=True, is_superuser=False)
    MembershipFactory(project=b["project"], user=user, role=ProjectRole.EDITOR)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["bots", "rubrics", "runs", "queues"])
    )
    client.force_login(user)
    page = client.get("/admin/bots/bot/").content.decode()
    assert "BetaBot" in page and "AlphaBot" not in page
    a_bot = Bot.objects.get(name="AlphaBot")
    response = client.get(f"/admin/bots/bot/{a_bot.pk}/change/")
    # Django's admin answers an object outside the queryset by sending back to the index.
    assert response.status_code == 302
    assert "AlphaBot" not in client.get(response["Location"], follow=True).content.decode()
    runs = client.get("/admin/runs/evaluationrun/").content.decode()
    assert "beta-run" in runs and "alpha-run" not in runs
    # The rubric list's bot filter, and the rubric versions, are the project's too.
    RubricFactory(bot=b["bot"], name="Beta rubric")
    rubrics = client.get("/admin/rubrics/rubric/").content.decode()
    assert "Beta rubric" in rubrics and "BetaBot" in rubrics
    assert "Alpha rubric" not in rubrics and "AlphaBot" not in rubrics
    versions = client.get("/admin/rubrics/rubricversion/").content.decode()
    assert "Beta rubric" in versions and "Alpha rubric" not in versions
    # A viewer of the project reads its runs in the admin but neither launches nor cancels.
    viewer = UserFactory(username="beta-viewer-staff", is_staff=True)
    MembershipFactory(project=b["project"], user=viewer, role=ProjectRole.VIEWER)
    viewer.user_permissions.set(Permission.objects.filter(content_type__app_label="runs"))
    other = type(client)()
    other.force_login(viewer)
    listed = other.get("/admin/runs/evaluationrun/").content.decode()
    assert "beta-run" in listed and "cancel_runs" not in listed and "Launch a run" not in listed
    assert other.get("/admin/runs/evaluationrun/launch/").status_code == 403
    # An editor may not delete (admin's), and the delete page says so.
    b_bot = b["bot"]
    assert client.get(f"/admin/bots/bot/{b_bot.pk}/delete/").status_code == 403


def test_traces_evaluations_and_rag_pages_are_the_session_s_project_s(client, a, b):
    trace = AgentTraceFactory(project=a["project"], session_id="alpha-session", agent_name="AlphaAgent")
    AgentEvaluationFactory(trace=trace, project=a["project"], overall_score=0.2, rating="poor")
    rag = TraceEvaluationFactory(project=a["project"])
    member_client(client, b["project"], ProjectRole.EDITOR)
    for path in ["/console/", "/console/traces/", "/console/rag/"]:
        page = client.get(path).content.decode()
        assert "alpha-session" not in page and "AlphaAgent" not in page, path
    assert client.get("/console/traces/alpha-session/").status_code == 404
    assert client.post("/console/traces/alpha-session/").status_code == 404
    assert client.get(f"/console/rag/{rag.pk}/").status_code == 404
    # And their evaluations stay out of B's queues: added by hand, as an id that names nothing.
    queue = ReviewQueueFactory(project=b["project"], kind="rag_evaluation", name="Beta RAG")
    client.post("/console/queues/add/", {"queue": queue.pk, "target_id": str(rag.pk)})
    assert not queue.items.exists()
