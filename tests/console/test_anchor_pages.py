"""The console's judge anchors: an editor marks a finished run's test-set version as anchors from the
run page, a reviewer starts a check from the anchors page, and the check's page shows the drift
report (verdicts that changed, kappa between the old and the new judge, what changed in the judge)."""

import pytest

from apps.core.models import Project, ProjectRole
from apps.runs.models import AnchorCheck, AnchorSet
from tests.console.test_projects import member_client
from tests.core.factories import ProjectFactory
from tests.runs.test_anchors import _reference_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def reference(db):
    from tests.rubrics.factories import RubricFactory, RubricRuleFactory
    from tests.testsets.factories import SuiteFactory

    rubric = RubricFactory(rules=[RubricRuleFactory(id="BRIEF")])
    test_set = SuiteFactory(bot=rubric.bot, name="PTO questions")
    return _reference_run(rubric, test_set, label="nightly"), test_set


def test_an_editor_marks_a_run_and_a_reviewer_checks_it(client, reference, django_capture_on_commit_callbacks):
    run, test_set = reference
    member_client(client, Project.objects.default(), ProjectRole.EDITOR, username="ed")
    assert 'id="mark-anchors"' in client.get(f"/console/runs/{run.run_id}/").content.decode()
    marked = client.post(f"/console/runs/{run.run_id}/anchors/", follow=True).content.decode()
    assert "Version 1 of PTO questions is anchors" in marked
    anchor_set = AnchorSet.objects.get()
    assert "PTO questions" in marked and "none yet" in marked and "4 results" in marked
    again = client.post(f"/console/runs/{run.run_id}/anchors/", follow=True).content.decode()
    assert "already" in again, "a version is anchors once"

    member_client(client, Project.objects.default(), ProjectRole.REVIEWER, username="rev")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/console/anchors/{anchor_set.anchor_id}/check/")
    check = AnchorCheck.objects.get()
    assert response.status_code == 302 and response.url == f"/console/anchor-checks/{check.check_id}/"
    page = client.get(response.url).content.decode()
    # The same heuristic judge on the same transcripts: nothing moved.
    assert "<strong>0</strong> of the 8 verdicts both judges gave changed" in page
    assert "nothing (the same judge" in page and 'id="per-key"' in page and "None." in page
    listed = client.get("/console/anchors/").content.decode()
    assert f"/console/anchor-checks/{check.check_id}/" in listed and "0 / 8" in listed


def test_a_viewer_neither_marks_nor_checks(client, reference):
    run, _ = reference
    member_client(client, Project.objects.default(), ProjectRole.VIEWER)
    assert 'id="mark-anchors"' not in client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert client.post(f"/console/runs/{run.run_id}/anchors/").status_code == 403
    assert not AnchorSet.objects.exists()


def test_a_running_check_refreshes_and_another_projects_is_404(client, reference):
    run, test_set = reference
    anchor_set = AnchorSet.objects.create(
        project=run.project, test_set_id=test_set.pk, test_set_version=1, reference_run=run, results=[1, 2]
    )
    check = AnchorCheck.objects.create(anchor_set=anchor_set, total=8)
    member_client(client, Project.objects.default(), ProjectRole.VIEWER)
    page = client.get(f"/console/anchor-checks/{check.check_id}/").content.decode()
    assert 'http-equiv="refresh"' in page and "0 of 8 verdicts judged (waiting for a worker)" in page
    member_client(client, ProjectFactory(slug="elsewhere"), ProjectRole.ADMIN, username="other")
    assert client.get(f"/console/anchor-checks/{check.check_id}/").status_code == 404
    assert "PTO questions" not in client.get("/console/anchors/").content.decode()


def test_an_editor_unmarks_anchors_a_reviewer_cannot(client, reference):
    run, test_set = reference
    member_client(client, Project.objects.default(), ProjectRole.EDITOR, username="ed")
    client.post(f"/console/runs/{run.run_id}/anchors/")
    anchor_set = AnchorSet.objects.get()
    assert f"/console/anchors/{anchor_set.anchor_id}/unmark/" in client.get("/console/anchors/").content.decode()
    member_client(client, Project.objects.default(), ProjectRole.REVIEWER, username="rev")
    page = client.get("/console/anchors/").content.decode()
    assert "/unmark/" not in page and "Check now" in page
    assert client.post(f"/console/anchors/{anchor_set.anchor_id}/unmark/").status_code == 403
    member_client(client, Project.objects.default(), ProjectRole.EDITOR, username="ed2")
    AnchorCheck.objects.create(anchor_set=anchor_set, status="running")
    busy = client.post(f"/console/anchors/{anchor_set.anchor_id}/unmark/", follow=True).content.decode()
    assert "pending or running" in busy and AnchorSet.objects.exists()
    AnchorCheck.objects.update(status="done")
    done = client.post(f"/console/anchors/{anchor_set.anchor_id}/unmark/", follow=True).content.decode()
    assert "Version 1 is no longer anchors." in done and not AnchorSet.objects.exists()
