"""Issue 21, low finding: a read-only console user's `GET /metrics-query/?q=…` spent a platform LLM
call and two Prometheus queries, while the API (POST /api/v1/metrics-query) answers 403 without the
`evaluate` scope. The page asks the same question of the same scopes now."""

import pytest

from apps.nlquery.page import views
from tests.core.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(settings, monkeypatch):
    """A configured backend whose every use is recorded instead of made."""
    settings.PROMETHEUS_URL = "http://prometheus.example:9090"
    calls = []
    monkeypatch.setattr(views, "example_questions", lambda backend: calls.append("examples") or [])
    monkeypatch.setattr(
        views, "metrics_query_answer", lambda question, project: calls.append(question) or {"result": None}
    )
    return calls


def test_a_reader_asking_a_question_gets_403_and_spends_nothing(client, answered, api):
    client.force_login(UserFactory(username="reader"))
    response = client.get("/metrics-query/", {"q": "Show CPU usage for the last hour"})
    assert response.status_code == 403
    assert "evaluate" in response.content.decode() and 'id="forbidden"' in response.content.decode()
    assert answered == []
    # The question box itself stays readable, without examples read from the backend for it.
    assert client.get("/metrics-query/").status_code == 200
    assert answered == []


def test_staff_asking_a_question_are_answered(client, answered):
    client.force_login(UserFactory(username="boss", is_staff=True))
    response = client.get("/metrics-query/", {"q": "Show CPU usage for the last hour"})
    assert response.status_code == 200 and answered == ["examples", "Show CPU usage for the last hour"]
