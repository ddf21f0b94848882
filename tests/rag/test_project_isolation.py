"""A RAG evaluation belongs to the project of the key that asked: a key of project B neither lists
nor reads project A's, and the TRACE contract works unchanged with a key of any project."""

import pytest

from apps.core.models import ProjectRole
from apps.rag.models import TraceEvaluation
from tests.core.factories import ProjectFactory, project_key_client
from tests.rag.test_api import PARIS, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def alpha():
    return ProjectFactory(slug="alpha")


@pytest.fixture
def alpha_api(alpha):
    return project_key_client(alpha, role=ProjectRole.EDITOR, username="alice")


@pytest.fixture
def beta_api():
    return project_key_client(ProjectFactory(slug="beta"), role=ProjectRole.EDITOR, username="bob")


def test_another_projects_evaluation_is_not_found_and_not_listed(alpha, alpha_api, beta_api):
    answer = post(alpha_api, PARIS)
    assert answer.status_code == 200
    evaluation_id = int(answer["X-Trace-Evaluation-Id"])
    assert TraceEvaluation.objects.get(pk=evaluation_id).project == alpha
    hidden = beta_api.get(f"/api/v1/trace/history/{evaluation_id}")
    assert hidden.status_code == 404
    assert hidden.json() == {"detail": f"No TRACE evaluation {evaluation_id}"}
    assert beta_api.get("/api/v1/trace/history").json()["count"] == 0
    assert alpha_api.get("/api/v1/trace/history").json()["count"] == 1
    assert alpha_api.get(f"/api/v1/trace/history/{evaluation_id}").status_code == 200


def test_the_contract_answers_the_same_in_any_project(alpha_api, beta_api):
    first, second = post(alpha_api, PARIS).json(), post(beta_api, PARIS).json()
    assert first == second
