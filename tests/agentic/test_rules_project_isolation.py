"""An online evaluation rule belongs to a project: it judges that project's traces only, and a key
of another project neither sees it nor learns its id exists."""

import pytest

from apps.agentic.models import AgentEvaluation
from apps.core.models import ProjectRole
from tests.agentic.factories import EvaluationRuleFactory
from tests.agentic.test_rules import complete_over_rest
from tests.core.factories import ProjectFactory, project_key_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/evaluation-rules"


@pytest.fixture
def alpha():
    return ProjectFactory(slug="alpha")


@pytest.fixture
def beta_api():
    return project_key_client(ProjectFactory(slug="beta"), role=ProjectRole.ADMIN, username="bob")


def test_another_projects_rule_is_neither_listed_nor_found(alpha, beta_api):
    rule = EvaluationRuleFactory(project=alpha, name="alpha rule")
    assert beta_api.get(URL).json() == []
    hidden = beta_api.get(f"{URL}/{rule.pk}")
    assert hidden.status_code == 404
    assert hidden.json() == {"detail": f"No evaluation rule with id {rule.pk}"}
    assert beta_api.delete(f"{URL}/{rule.pk}").status_code in (403, 404)


def test_a_rule_judges_only_its_own_projects_traces(alpha, beta_api, django_capture_on_commit_callbacks):
    EvaluationRuleFactory(project=alpha, name="alpha rule")
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(beta_api, "beta-session")
    assert not AgentEvaluation.objects.exists()


def test_the_same_rule_name_in_two_projects(alpha, beta_api):
    EvaluationRuleFactory(project=alpha, name="nightly")
    beta = ProjectFactory(slug="beta")
    EvaluationRuleFactory(project=beta, name="nightly")
    assert [r["name"] for r in beta_api.get(URL).json()] == ["nightly"]
