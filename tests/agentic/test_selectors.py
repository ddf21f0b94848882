from apps.agentic.demo import load_demo_evaluations
from apps.agentic.models import AgentEvaluation
from apps.agentic.selectors import evaluation_list


def test_evaluation_list_is_one_sessions_verdicts_newest_first(api, demo_traces):
    load_demo_evaluations()
    api.post("/api/v1/metrics/evaluate/session", {"session_id": "demo_k8s_list_delhi", "force": True}, format="json")
    evaluations = evaluation_list(session_id="demo_k8s_list_delhi")
    # The forced re-evaluation is a second row beside the first, not a replacement: both are listed.
    assert len(evaluations) == 2 and {e.session_id for e in evaluations} == {"demo_k8s_list_delhi"}
    newest = AgentEvaluation.objects.filter(session_id="demo_k8s_list_delhi").latest("created_at", "id")
    assert evaluations[0].pk == newest.pk
