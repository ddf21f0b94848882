import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from apps.core.errors import ConflictError, NotFoundError
from apps.traces import selectors, services, tracing
from apps.traces.demo import DEMO_TRACES, load_demo_traces
from apps.traces.models import AgentTrace, ToolCall
from apps.traces.tasks import fail_stale_traces


@pytest.mark.django_db
def test_contract_in_process_usage():
    """The calls exactly as the contract's "How Tracing Works" shows them."""
    tracing.start_trace("openwebui_abc123", "List clusters in Delhi", "OrchestratorAgent")
    tracing.record_intent("openwebui_abc123", "list_k8s_cluster", "k8s_cluster", "list")
    tracing.record_tool_call(
        "openwebui_abc123",
        "list_k8s_clusters",
        {"datacenter": "Delhi"},
        [{"name": "prod-01"}, {"name": "dev-02"}],
        True,
    )
    tracing.complete_trace("openwebui_abc123", "Found 2 clusters in Delhi...", True)

    trace = AgentTrace.objects.get(session_id="openwebui_abc123")
    assert (trace.intent_detected, trace.resource_type, trace.operation) == ("list_k8s_cluster", "k8s_cluster", "list")
    assert trace.status == "completed" and trace.end_time >= trace.start_time
    assert trace.duration_seconds is not None and trace.tool_call_count == 1
    assert trace.tool_calls.get().tool_result == [{"name": "prod-01"}, {"name": "dev-02"}]


@pytest.mark.django_db
def test_unknown_session_raises_not_found():
    with pytest.raises(NotFoundError):
        services.trace_tool_call_record(session_id="nope", tool_name="t", tool_args={}, tool_result=None, success=True)


@pytest.mark.django_db
def test_stale_traces_are_failed_by_the_reaper_task():
    services.trace_start(session_id="old", user_query="q", agent_name="a")
    services.trace_start(session_id="fresh", user_query="q", agent_name="a")
    AgentTrace.objects.filter(session_id="old").update(start_time=timezone.now() - timedelta(hours=3))
    assert fail_stale_traces.delay(older_than_seconds=3600) is not None
    old, fresh = AgentTrace.objects.get(session_id="old"), AgentTrace.objects.get(session_id="fresh")
    assert old.status == "failed" and "Abandoned" in old.error and old.end_time is not None
    assert fresh.status == "active"
    with pytest.raises(ConflictError):
        services.trace_tool_call_record(session_id="old", tool_name="t", tool_args={}, tool_result=None, success=True)


@pytest.mark.django_db
def test_demo_traces_load_once():
    assert load_demo_traces() == len(DEMO_TRACES)
    assert load_demo_traces() == 0
    assert AgentTrace.objects.count() == len(DEMO_TRACES)
    failed = AgentTrace.objects.get(session_id="demo_k8s_delete_failed")
    assert failed.status == "failed" and failed.tool_calls.get().success is False


# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_32_threads_recording_on_one_session_lose_and_duplicate_nothing(on_postgres):
    services.trace_start(session_id="busy", user_query="q", agent_name="agent")
    threads_n, calls_each = 32, 5
    barrier = threading.Barrier(threads_n)
    errors = []

    def worker(t):
        try:
            barrier.wait()
            for i in range(calls_each):
                services.trace_tool_call_record(
                    session_id="busy",
                    tool_name="tool",
                    tool_args={"thread": t, "i": i},
                    tool_result=None,
                    success=True,
                    call_id=f"{t}-{i}",
                )
            # A retry of an already-recorded call from every thread at once must not duplicate.
            services.trace_tool_call_record(
                session_id="busy",
                tool_name="tool",
                tool_args={"thread": t, "i": 0},
                tool_result=None,
                success=True,
                call_id=f"{t}-0",
            )
        except Exception as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    calls = ToolCall.objects.filter(trace__session_id="busy")
    assert calls.count() == threads_n * calls_each
    assert sorted(calls.values_list("seq", flat=True)) == list(range(1, threads_n * calls_each + 1))
    assert {(c["tool_args"]["thread"], c["tool_args"]["i"]) for c in calls.values("tool_args")} == {
        (t, i) for t in range(threads_n) for i in range(calls_each)
    }
    assert AgentTrace.objects.get(session_id="busy").tool_call_count == threads_n * calls_each


# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_with_the_same_sessions_store_each_once(on_postgres):
    item = services.BatchTrace(
        session_id="",
        user_query="q",
        agent_name="a",
        final_response="r",
        success=True,
        tool_calls=[services.ToolCallInput(tool_name="t")],
    )
    barrier = threading.Barrier(8)
    results = []

    def worker():
        barrier.wait()
        items = []
        for n in range(20):
            canonical = {"session_id": f"cb{n}"}
            items.append((n, services.BatchTrace(**{**item.__dict__, "session_id": f"cb{n}", "canonical": canonical})))
        results.append(services.traces_ingest_batch(items=items))
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len(r.accepted) == 20 and not r.rejected for r in results)
    assert sum(a["status"] == "created" for r in results for a in r.accepted) == 20
    assert AgentTrace.objects.count() == 20 and ToolCall.objects.count() == 20


@pytest.mark.django_db
def test_trace_find_answers_none_where_trace_get_raises():
    assert selectors.trace_find(session_id="missing") is None
    with pytest.raises(NotFoundError, match="No trace found for session missing"):
        selectors.trace_get(session_id="missing")
    services.trace_start(session_id="present", user_query="q", agent_name="a")
    assert selectors.trace_get(session_id="present") == selectors.trace_find(session_id="present")


def test_lifecycle_services_take_keyword_arguments_only():
    # The positional forms are the contract's, and live only in the tracing shim.
    assert not any(hasattr(services, name) for name in tracing.__all__)
    with pytest.raises(TypeError):
        services.trace_start("s", "q", "a")
    with pytest.raises(TypeError):
        services.trace_complete("s", "done", True)
