"""The per-request bound on LLM evaluations (issue 21): /evaluate/batch with force and the LLM judge
made up to 1,500 platform LLM calls in one request."""

import pytest

from apps.agentic.models import AgentEvaluation
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db

BATCH = "/api/v1/metrics/evaluate/batch"


@pytest.fixture
def sessions():
    return [AgentTraceFactory(session_id=f"bound-{n}").session_id for n in range(3)]


def test_a_forced_llm_batch_beyond_the_bound_is_refused_before_any_llm_call(
    default_key_api, openai_server, settings, sessions
):
    settings.EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST = 2
    openai_server.default = {"explanation": "ok", "score": 4}
    response = default_key_api.post(BATCH, {"session_ids": sessions, "force": True, "judge": "llm"}, format="json")
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert "EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST" in detail and "3" in detail and "2" in detail
    assert openai_server.requests == [] and not AgentEvaluation.objects.exists()
    # Within the bound it judges; the default judge is the LLM one when an LLM is configured.
    response = default_key_api.post(BATCH, {"session_ids": sessions[:2], "force": True}, format="json")
    assert response.status_code == 200 and response.json()["evaluated"] == 2
    assert AgentEvaluation.objects.count() == 2


def test_a_session_named_twice_counts_once_and_the_heuristic_judge_is_not_bounded(
    default_key_api, openai_server, settings, sessions
):
    settings.EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST = 2
    openai_server.default = {"explanation": "ok", "score": 4}
    twice = [sessions[0], sessions[1], sessions[0]]
    assert default_key_api.post(BATCH, {"session_ids": twice, "judge": "llm"}, format="json").status_code == 200
    response = default_key_api.post(
        BATCH, {"session_ids": sessions, "force": True, "judge": "heuristic"}, format="json"
    )
    assert response.status_code == 200 and response.json()["evaluated"] == 3
