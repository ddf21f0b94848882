"""The history's filters (apps.agentic.filters.EvaluationHistoryFilter) select what the hand-written
filters of before did, with the same SQL."""

import pytest

from apps.agentic.filters import EvaluationHistoryFilter
from apps.agentic.models import AgentEvaluation
from tests.agentic.factories import AgentEvaluationFactory

BASE = "/api/v1/metrics"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("filters", "by_hand"),
    [
        ({}, {}),
        ({"agent_name": "NetworkAgent"}, {"agent_name": "NetworkAgent"}),
        ({"operation": "delete"}, {"operation": "delete"}),
        ({"min_score": 0.97}, {"overall_score__gte": 0.97}),
        (
            {"agent_name": "NetworkAgent", "operation": "delete", "min_score": 0.8},
            {"agent_name": "NetworkAgent", "operation": "delete", "overall_score__gte": 0.8},
        ),
        ({"agent_name": ""}, {"agent_name": ""}),
    ],
)
def test_the_filterset_writes_the_query_the_hand_written_filters_wrote(filters, by_hand):
    applied = EvaluationHistoryFilter(filters, AgentEvaluation.objects.all()).qs
    expected = AgentEvaluation.objects.filter(**by_hand)
    assert applied.query.sql_with_params() == expected.query.sql_with_params()


@pytest.mark.django_db
def test_an_empty_agent_name_chooses_the_unnamed_evaluations(api):
    AgentEvaluationFactory(agent_name="")
    AgentEvaluationFactory(agent_name="NetworkAgent")
    unnamed = api.get(f"{BASE}/history?agent_name=").json()["evaluations"]
    assert [record["agent_name"] for record in unnamed] == [""]
    assert len(api.get(f"{BASE}/history").json()["evaluations"]) == 2
