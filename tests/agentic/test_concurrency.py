import threading

import pytest
from django.db import connection

from apps.agentic.models import AgentEvaluation, EvaluationRollup
from apps.agentic.services import evaluation_rollup_rebuild, evaluations_create_for_sessions
from apps.traces import services as traces


# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_keep_the_summary_totals_exact(on_postgres):
    agents = ["AgentA", "AgentB"]
    for i in range(40):
        sid = f"c{i}"
        traces.trace_start(session_id=sid, user_query="List all Kubernetes clusters in Delhi", agent_name=agents[i % 2])
        traces.trace_intent_record(
            session_id=sid, intent="list_k8s_cluster", resource_type="k8s_cluster", operation="list"
        )
        traces.trace_tool_call_record(
            session_id=sid,
            tool_name="list_k8s_clusters",
            tool_args={"datacenter": "Delhi"},
            tool_result=[{"name": f"prod-{i}"}],
            success=True,
        )
        traces.trace_complete(
            session_id=sid, final_response=f"Delhi has prod-{i}." if i % 3 else "No idea.", success=True
        )
    errors = []

    def run(ids):
        try:
            evaluations_create_for_sessions(session_ids=ids, judge_name="heuristic", force=True)
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
        return sorted(
            (r.agent_name, r.operation, r.rating, r.count, round(r.overall_sum, 6))
            for r in EvaluationRollup.objects.all()
        )

    incremental = snapshot()
    evaluation_rollup_rebuild()
    assert snapshot() == incremental
    assert sum(r[3] for r in incremental) == 160
