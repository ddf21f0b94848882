"""The metric judges published from alignment trials, in the admin: the project's only, an
unallowed judge model refused, a second judge for the same agent and metric refused (not a 500),
and every change audited."""

import pytest

from apps.agentic.models import MetricJudge
from apps.core.models import AuditEvent, Project
from tests.core.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def _post(client, model, agent="BillingAgent"):
    return client.post(
        "/admin/agentic/metricjudge/add/",
        {"agent_name": agent, "metric": "task_adherence", "judge_model": model, "instructions": ""},
    )


def test_an_unallowed_model_and_a_duplicate_are_refused_an_allowed_one_is_audited(admin_client, settings):
    settings.OPENAI_API_KEY, settings.EVALSITE_JUDGE_MODEL, settings.EVALSITE_JUDGE_MODELS = "k", "mini", ["careful"]
    refused = _post(admin_client, "gpt-9-expensive")
    assert refused.status_code == 200 and "EVALSITE_JUDGE_MODELS" in refused.content.decode()
    assert not MetricJudge.objects.exists()
    assert _post(admin_client, "careful").status_code == 302
    row = MetricJudge.objects.get()
    assert (row.project, row.judge_model) == (Project.objects.default(), "careful")
    assert AuditEvent.objects.filter(object_type="metric_judge", action="create").count() == 1
    again = _post(admin_client, "heuristic")
    assert again.status_code == 200 and "already has a judge for this metric" in again.content.decode()
    assert _post(admin_client, "heuristic", agent="").status_code == 302, "every agent's is another row"


def test_another_projects_metric_judges_are_not_listed(admin_client):
    MetricJudge.objects.create(project=Project.objects.default(), agent_name="MineAgent", metric="task_adherence")
    MetricJudge.objects.create(project=ProjectFactory(), agent_name="TheirAgent", metric="task_adherence")
    page = admin_client.get("/admin/agentic/metricjudge/").content.decode()
    assert "MineAgent" in page and "TheirAgent" not in page
