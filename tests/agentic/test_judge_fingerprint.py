"""Issue 16 item 3: every agentic evaluation records what judged it."""

import pytest

from apps.agentic.judges import get_agentic_judge, llm_agentic
from apps.agentic.models import AgentEvaluation
from tests.agentic.test_llm_judge import DATA, grade
from tests.fakes.openai_server import completion_body

BASE = "/api/v1/metrics"


def test_llm_evaluation_fingerprint_names_model_server_model_and_prompt(openai_server, monkeypatch):
    openai_server.default = grade(4)
    before = get_agentic_judge(None).evaluate(DATA).fingerprint
    assert before["judge"] == "llm" and before["model"] == "judge-model" and "server_model" not in before
    assert len(before["prompt_template"]) == 12 and before["judge_version"]
    monkeypatch.setattr(llm_agentic, "GRADE_SESSION", "Grade the session strictly.")
    assert get_agentic_judge(None).evaluate(DATA).fingerprint["prompt_template"] != before["prompt_template"]
    for _ in range(3):  # one call per metric
        openai_server.push(
            lambda body: (200, completion_body("judge-model-0613", '{"explanation": "ok", "score": 5}'), None)
        )
    assert get_agentic_judge(None).evaluate(DATA).fingerprint["server_model"] == "judge-model-0613"


def test_heuristic_evaluation_fingerprint():
    fingerprint = get_agentic_judge("heuristic").evaluate(DATA).fingerprint
    assert fingerprint["judge"].startswith("heuristic") and fingerprint["model"] is None


@pytest.mark.django_db
def test_stored_and_answered_with_the_evaluation(api, openai_server):
    openai_server.default = grade(5)
    response = api.post(f"{BASE}/evaluate/manual", {"user_query": "PTO?", "agent_response": "15 days."}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["fingerprint"]["model"] == "judge-model"
    assert AgentEvaluation.objects.get().judge_fingerprint["model"] == "judge-model"


@pytest.mark.django_db
def test_a_changed_prompt_template_is_a_new_judge_and_is_not_answered_from_the_old_verdict(
    api, openai_server, demo_traces, monkeypatch
):
    """Reuse is keyed on what judged, not only on the judge's label: after a prompt change under the
    same label, the session is judged again instead of answering with the old prompt's verdict."""
    openai_server.default = grade(5)
    url = "/api/v1/metrics/evaluate/session"
    first = api.post(url, {"session_id": "demo_k8s_list_delhi"}, format="json").json()
    assert api.post(url, {"session_id": "demo_k8s_list_delhi"}, format="json").json()["reused"] is True
    monkeypatch.setattr(llm_agentic, "GRADE_SESSION", "Grade the session strictly.")
    sent = len(openai_server.chat_requests)
    changed = api.post(url, {"session_id": "demo_k8s_list_delhi"}, format="json").json()
    assert changed["reused"] is False and len(openai_server.chat_requests) == sent + 3
    assert changed["fingerprint"]["prompt_template"] != first["fingerprint"]["prompt_template"]
    # Under the new prompt, its own verdict is the one reused.
    again = api.post(url, {"session_id": "demo_k8s_list_delhi"}, format="json").json()
    assert again["reused"] is True and again["fingerprint"] == changed["fingerprint"]
