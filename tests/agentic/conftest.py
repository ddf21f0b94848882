import pytest

from apps.traces import services as trace_services
from apps.traces.demo import DEMO_TRACES


def record_trace(session_id, *, query="List all Kubernetes clusters in Delhi", agent="OrchestratorAgent",
                 intent=("list_k8s_cluster", "k8s_cluster", "list"), calls=None, final="Found 2 clusters in Delhi: prod-01 and dev-02",
                 success=True, complete=True):
    trace_services.start_trace(session_id, query, agent)
    if intent:
        trace_services.record_intent(session_id, *intent)
    for i, (name, args, result, ok) in enumerate(calls if calls is not None else [
            ("list_k8s_clusters", {"datacenter": "Delhi"}, [{"name": "prod-01"}, {"name": "dev-02"}], True)], start=1):
        trace_services.record_tool_call(session_id, name, args, result, ok, call_id=f"{session_id}-{i}")
    if complete:
        trace_services.complete_trace(session_id, final, success)


@pytest.fixture
def demo_traces(db):
    from apps.traces.demo import load_demo_traces

    load_demo_traces()
    return [d["session_id"] for d in DEMO_TRACES]
