import threading

import pytest
from django.db import connection

from apps.agentic.models import AgentEvaluation, EvaluationRollup
from apps.agentic.services import evaluation_rollup_rebuild, evaluations_for_sessions
from apps.traces import services as traces


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_keep_the_summary_totals_exact(on_postgres):
    agents = ["AgentA", "AgentB"]
    for i in range(40):
        sid = f"c{i}"
        traces.start_trace(sid, "List all Kubernetes clusters in Delhi", agents[i % 2])
        traces.record_intent(sid, "list_k8s_cluster", "k8s_cluster", "list")
        traces.record_tool_call(sid, "list_k8s_clusters", {"datacenter": "Delhi"}, [{"name": f"prod-{i}"}], True)
        traces.complete_trace(sid, f"Delhi has prod-{i}." if i % 3 else "No idea.", True)
    errors = []

    def run(ids):
        try:
            evaluations_for_sessions(session_ids=ids, judge_name="heuristic", force=True)
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    # Every thread touches the same (agent, operation, rating) keys at once.
    threads = [threading.Thread(target=run, args=([f"c{i}" for i in range(k % 2, 40, 2)],)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert AgentEvaluation.objects.count() == 8 * 20

    def snapshot():
        return sorted((r.agent_name, r.operation, r.rating, r.count, round(r.overall_sum, 6))
                      for r in EvaluationRollup.objects.all())

    incremental = snapshot()
    evaluation_rollup_rebuild()
    assert snapshot() == incremental
    assert sum(r[3] for r in incremental) == 160
