"""The console's alignment loop: the rubric page starts a trial (reviewers and up), the trial's page
shows kappa before and after with intervals and the items that changed, and an editor publishes it."""

import pytest

from apps.core.models import Project, ProjectRole
from apps.rubrics.models import RubricVersion
from apps.rubrics.services import rubric_publish_version
from apps.runs.models import AlignmentTrial
from tests.console.test_projects import member_client
from tests.core.factories import ProjectFactory
from tests.runs.alignment_fixtures import brief_rubric, content_of, labelled

pytestmark = pytest.mark.django_db


@pytest.fixture
def rubric():
    return brief_rubric()


def _start(client, rubric, **candidate):
    kind, value = next(iter(candidate.items()))
    return client.post(
        f"/console/rubrics/{rubric.pk}/alignment-trials/",
        {"rule": "BRIEF", "kind": kind, kind: value},
    )


def test_a_reviewer_starts_a_trial_and_reads_it(client, rubric, django_capture_on_commit_callbacks):
    results = labelled(rubric, 20, 20)
    member_client(client, Project.objects.default(), ProjectRole.REVIEWER)
    page = client.get(f"/console/rubrics/{rubric.pk}/").content.decode()
    assert 'id="trial-form"' in page and "No trial yet." in page and "needs 20 labelled items" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = _start(client, rubric, rubric_version=2)
    trial = AlignmentTrial.objects.get()
    assert response.status_code == 302 and response.url == f"/console/alignment-trials/{trial.trial_id}/"
    page = client.get(response.url).content.decode()
    assert "the rule's text from <strong>version 2</strong>" in page
    assert "Of the 40 items reviewers labelled for this rule, 20 are held out" in page
    assert "Better at 95%." in page and "An editor can publish it." in page, "a reviewer measures, an editor publishes"
    assert 'id="changed-items"' in page
    changed_short = [r for r in results[:20] if r.pk in trial.test]
    assert f"{len(changed_short)} of 20" in page
    assert all(f"/console/results/{r.result_id}/" in page for r in changed_short)
    assert not any(f"/console/results/{r.result_id}/" in page for r in results[20:] if r.pk in trial.test)
    listed = client.get(f"/console/rubrics/{rubric.pk}/").content.decode()
    assert f"/console/alignment-trials/{trial.trial_id}/" in listed and "better" in listed
    assert client.post(f"/console/alignment-trials/{trial.trial_id}/publish/").status_code == 403


def test_an_editor_publishes_a_better_candidate(client, rubric, django_capture_on_commit_callbacks):
    labelled(rubric, 20, 20)
    head = RubricVersion.objects.get(rubric=rubric, version=1).snapshot
    head["description"] = "edited"
    rubric_publish_version(rubric=rubric, content=content_of(head))
    member_client(client, Project.objects.default(), ProjectRole.EDITOR)
    with django_capture_on_commit_callbacks(execute=True):
        url = _start(client, rubric, rubric_version=2).url
    page = client.get(url).content.decode()
    assert "Publish the candidate" in page
    published = client.post(url + "publish/", follow=True).content.decode()
    assert "Published version 4 of the rubric with the new rule text." in published
    assert "Published " in published and "version 4 of the rubric" in published
    again = client.post(url + "publish/", follow=True).content.decode()
    assert "published already" in again


def test_a_refused_trial_says_why_on_the_rubric_page(client, rubric, django_capture_on_commit_callbacks):
    labelled(rubric, 5, 5)
    member_client(client, Project.objects.default(), ProjectRole.REVIEWER)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(
            f"/console/rubrics/{rubric.pk}/alignment-trials/",
            {"rule": "BRIEF", "kind": "rubric_version", "rubric_version": "2"},
            follow=True,
        ).content.decode()
    # Said once: not once as the form's own error and again among all its errors.
    assert page.count("A trial needs at least 20 items a reviewer labelled for rule BRIEF; it has 10.") == 1
    assert not AlignmentTrial.objects.exists()


def test_a_viewer_cannot_start_a_trial(client, rubric):
    labelled(rubric, 10, 10)
    member_client(client, Project.objects.default(), ProjectRole.VIEWER)
    assert 'id="trial-form"' not in client.get(f"/console/rubrics/{rubric.pk}/").content.decode()
    assert _start(client, rubric, rubric_version=2).status_code == 403
    assert not AlignmentTrial.objects.exists()


def test_a_running_trial_refreshes_and_shows_progress(client, rubric):
    labelled(rubric, 10, 10)
    trial = AlignmentTrial.objects.create(
        project=rubric.project, rubric=rubric, rule_id="BRIEF", candidate={"judge_model": "heuristic"}, test=[1, 2, 3]
    )
    member_client(client, Project.objects.default(), ProjectRole.VIEWER)
    page = client.get(f"/console/alignment-trials/{trial.trial_id}/").content.decode()
    assert 'http-equiv="refresh"' in page and "0 of 3 held-out items judged (waiting for a worker)" in page


def test_another_projects_trial_is_404(client, rubric):
    trial = AlignmentTrial.objects.create(
        project=rubric.project, rubric=rubric, rule_id="BRIEF", candidate={"judge_model": "heuristic"}
    )
    member_client(client, ProjectFactory(slug="other"), ProjectRole.ADMIN)
    assert client.get(f"/console/alignment-trials/{trial.trial_id}/").status_code == 404


# --- a metric's trial, from the agent agreement page -------------------------------------------------


def test_a_reviewer_tries_a_metric_judge_and_an_editor_publishes_it(
    client, openai_server, settings, django_capture_on_commit_callbacks
):
    from apps.agentic.models import MetricJudge
    from tests.runs.test_metric_alignment import _grades_done, reviewed

    settings.EVALSITE_JUDGE_MODELS = ["careful-model"]
    evaluations = reviewed(20, 20)
    member_client(client, Project.objects.default(), ProjectRole.REVIEWER)
    page = client.get("/console/agents/agreement/", {"agent": "BillingAgent"}).content.decode()
    assert 'id="trial-form"' in page and 'name="agent_name" value="BillingAgent"' in page and "No trial yet." in page
    for _ in range(20):
        openai_server.push(_grades_done)
    form = {
        "metric": "task_adherence",
        "agent_name": "BillingAgent",
        "kind": "judge_model",
        "judge_model": "careful-model",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/console/agents/alignment-trials/", form)
    trial = AlignmentTrial.objects.get()
    assert response.status_code == 302 and response.url == f"/console/alignment-trials/{trial.trial_id}/"
    page = client.get(response.url).content.decode()
    assert "Alignment trial of task_adherence" in page and "the judge model <strong>careful-model</strong>" in page
    assert "Better at 95%." in page and "An editor can publish it." in page
    failed_held_out = [e for e in evaluations[20:] if e.pk in trial.test]
    assert failed_held_out and all(f"/console/traces/{e.session_id}/" in page for e in failed_held_out)
    listed = client.get("/console/agents/agreement/", {"agent": "BillingAgent"}).content.decode()
    assert f"/console/alignment-trials/{trial.trial_id}/" in listed and "model careful-model" in listed
    assert client.post(f"/console/alignment-trials/{trial.trial_id}/publish/").status_code == 403

    member_client(client, Project.objects.default(), ProjectRole.EDITOR)
    published = client.post(f"/console/alignment-trials/{trial.trial_id}/publish/", follow=True).content.decode()
    assert "The task_adherence of BillingAgent is now graded with the candidate" in published
    assert "evaluations made since grade task_adherence with the model careful-model" in published
    assert MetricJudge.objects.get().judge_model == "careful-model"


def test_a_metric_trial_refused_says_why_on_the_agent_page(client):
    member_client(client, Project.objects.default(), ProjectRole.REVIEWER)
    form = {"metric": "task_adherence", "agent_name": "BillingAgent", "kind": "judge_model", "judge_model": "heuristic"}
    page = client.post("/console/agents/alignment-trials/", form, follow=True).content.decode()
    refusal = "A trial needs at least 20 evaluations of BillingAgent a reviewer labelled for task_adherence; it has 0."
    assert page.count(refusal) == 1
    assert not AlignmentTrial.objects.exists()
