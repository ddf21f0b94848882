"""The API tests of POST /api/v1/metrics-query and /metrics-query/ (test_api.py) and the real
Prometheus API test, unchanged, with `api` a key of a project other than `default`: what the
contract promises holds for every project's key. Their questions ask about the shared machines
(CPU usage, process_* metrics), which carry no project label and are answered whatever the
project (docs/nlquery.md, "Projects")."""

import pytest

from apps.core.models import ProjectRole
from tests.core.factories import ProjectFactory, project_key_client
from tests.nlquery.test_api import (  # noqa: F401  (collected here with this module's `api`)
    answering_backend,
    test_answer_is_the_state,
    test_endpoint_is_in_the_openapi_schema,
    test_failures_are_answers_with_error_and_no_details,
    test_invalid_body_is_422,
    test_requires_authentication,
)
from tests.nlquery.test_prometheus_integration import test_api_answers_from_the_real_prometheus  # noqa: F401


@pytest.fixture
def api(db):
    """A key of project `team-b` with read, ingest, evaluate and configure, as conftest's `api`."""
    return project_key_client(
        ProjectFactory(slug="team-b"), role=ProjectRole.EDITOR, scopes=["read", "ingest", "evaluate", "configure"]
    )


def test_the_key_really_acts_in_another_project(api):
    # A key sees its own project only (apps.core.projects.resolution.projects_visible).
    assert [p["slug"] for p in api.get("/api/v1/projects").json()] == ["team-b"]
