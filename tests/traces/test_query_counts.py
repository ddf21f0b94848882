"""Queries per request on the per-call path (bench/ingest.py --per-call), so a regression shows up
here before it shows up as lost throughput. The counts are for a web request in autocommit, as a
server runs it: transaction=True, because inside pytest's transaction every write is wrapped in a
savepoint that a real request does not pay for. The races those single statements must survive
are at the end."""

import json
import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from apps.traces import services
from apps.traces.models import AgentTrace, ToolCall

BASE = "/api/v1/metrics/traces"
CALL = {
    "tool_name": "list_k8s_clusters",
    "tool_args": {"datacenter": "Delhi"},
    "tool_result": [{"name": "prod-01"}],
    "success": True,
    "duration_ms": 12.5,
}


def _post(api, path, body, headers=None):
    return api.post(path, data=json.dumps(body), content_type="application/json", headers=headers or {})


def _counted(api, path, body, headers=None):
    with CaptureQueriesContext(connection) as queries:
        response = _post(api, path, body, headers)
    return response, [q["sql"] for q in queries.captured_queries]


@pytest.mark.postgres_only
# transaction=True: counted in autocommit, as a server runs the request (see the module docstring).
@pytest.mark.django_db(transaction=True)
class TestPerCallQueries:
    @pytest.fixture(autouse=True)
    def trace(self, api, on_postgres):
        # The first request authenticates the key (and stamps last_used_at); later ones use the cache.
        assert _post(api, BASE, {"session_id": "s1", "user_query": "q", "agent_name": "A"}).status_code == 201
        # Likewise the first completion reads the enabled evaluation rules; later ones use their cache.
        _post(api, BASE, {"session_id": "warm-up", "user_query": "q", "agent_name": "A"})
        assert _post(api, f"{BASE}/warm-up/complete", {"final_response": "done", "success": True}).status_code == 200
        self.api = api

    def test_tool_call_is_one_statement(self):
        for _ in range(3):
            _post(self.api, f"{BASE}/s1/tool-calls", CALL)
        response, sql = _counted(self.api, f"{BASE}/s1/tool-calls", {**CALL, "call_id": "c-4"})
        assert response.status_code == 201 and response.json()["tool_calls"][0]["seq"] == 4
        # 1: the UPDATE that locks the trace and bumps its count feeds the INSERT and the ledger
        # entry in the same statement; no key lookup (cached), no BEGIN/COMMIT (autocommit), no re-read of the trace.
        assert len(sql) == 1, sql
        assert AgentTrace.objects.get(session_id="s1").tool_call_count == 4

    def test_a_retried_call_id_takes_the_locked_path(self):
        _post(self.api, f"{BASE}/s1/tool-calls", {**CALL, "call_id": "c-1"})
        response, sql = _counted(self.api, f"{BASE}/s1/tool-calls", {**CALL, "call_id": "c-1"})
        assert response.status_code == 200 and response.json()["tool_calls"][0]["created"] is False
        # The one-statement attempt matches nothing, then BEGIN, SELECT … FOR UPDATE, the stored
        # call, the ledger entry (a duplicate), COMMIT: retries are rare, so they may cost more than
        # a new call.
        assert len(sql) == 6, sql

    def test_start_intent_and_complete(self):
        _, sql = _counted(self.api, BASE, {"session_id": "s2", "user_query": "q", "agent_name": "A"})
        assert len(sql) == 1, sql  # the INSERT; a retry would add the read of the stored trace
        _, sql = _counted(self.api, f"{BASE}/s2/intent", {"intent": "i", "resource_type": "r", "operation": "o"})
        assert len(sql) == 2, sql  # UPDATE … RETURNING, then the tool calls the answer shows
        for _ in range(3):
            _post(self.api, f"{BASE}/s2/tool-calls", CALL)
        response, sql = _counted(self.api, f"{BASE}/s2/complete", {"final_response": "done", "success": True})
        assert response.status_code == 200 and len(response.json()["tool_calls"]) == 3
        assert len(sql) == 2, sql  # UPDATE … RETURNING, then the tool calls (one query, not one per call)
        trace = AgentTrace.objects.get(session_id="s2")
        assert trace.status == "completed" and trace.duration_seconds >= 0 and trace.end_time is not None

    def test_finished_trace_still_refuses_calls(self):
        _post(self.api, f"{BASE}/s1/complete", {"final_response": "done", "success": True})
        assert _post(self.api, f"{BASE}/s1/tool-calls", CALL).status_code == 409
        assert (
            _post(self.api, f"{BASE}/s1/intent", {"intent": "x", "resource_type": None, "operation": None}).status_code
            == 409
        )
        assert _post(self.api, f"{BASE}/nope/tool-calls", CALL).status_code == 404


@pytest.mark.postgres_only
# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_the_same_call_id_from_16_threads_at_once_is_stored_once(on_postgres):
    services.trace_start(session_id="race", user_query="q", agent_name="agent")
    threads_n = 16
    barrier = threading.Barrier(threads_n)
    results, errors = [], []

    def worker():
        try:
            barrier.wait()
            results.append(
                services.trace_tool_call_record(
                    session_id="race",
                    tool_name="tool",
                    tool_args={"a": 1},
                    tool_result=None,
                    success=True,
                    call_id="dup",
                ).seq
            )
        except Exception as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # The losers of the race either see the stored call_id in the statement's NOT EXISTS or break
    # the unique constraint; both fall back to the locked path and get the stored call back.
    assert errors == []
    assert results == [1] * threads_n
    assert list(ToolCall.objects.filter(trace__session_id="race").values_list("seq", flat=True)) == [1]
    # A refused statement must not have bumped the count: the next call is seq 2, with no gap.
    assert AgentTrace.objects.get(session_id="race").tool_call_count == 1
    assert (
        services.trace_tool_call_record(
            session_id="race", tool_name="tool", tool_args={}, tool_result=None, success=True
        ).seq
        == 2
    )
