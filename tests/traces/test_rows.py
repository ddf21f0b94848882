"""The hand-written statements of the per-call path load exactly what the ORM loads (apps/traces/rows.py),
on SQLite (whose datetimes and booleans need converters) and on PostgreSQL (jsonb as text)."""

import json
from datetime import UTC, datetime

from django.db import connection

from apps.traces import selectors, services
from apps.traces.models import AgentTrace, ToolCall
from apps.traces.rows import from_rows, select_columns

BASE = "/api/v1/metrics/traces"


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_trace_tool_calls_equal_the_orm(db):
    trace, _ = services.trace_start(
        session_id="rows-1", user_query="q", agent_name="A", metadata={"n": [1, {"x": None}]}
    )
    ts = datetime(2026, 1, 8, 10, 0, 0, 123456, tzinfo=UTC)
    services.trace_tool_calls_record(
        session_id="rows-1",
        calls=[
            services.ToolCallInput(
                tool_name="b",
                tool_args={"k": "v"},
                tool_result=[1, "two", None],
                success=False,
                error="boom",
                duration_ms=1.5,
                call_id="c2",
                timestamp=ts,
            ),
            services.ToolCallInput(tool_name="a", tool_args={}, tool_result=None),
        ],
    )
    loaded = selectors.trace_tool_call_list(trace=trace)
    expected = list(ToolCall.objects.filter(trace=trace).order_by("seq"))
    assert [_fields(c) for c in loaded] == [_fields(c) for c in expected]
    assert loaded[0].timestamp == ts and loaded[0].success is False and loaded[1].tool_result is None
    assert all(not c._state.adding and c._state.db == "default" for c in loaded)


def test_from_rows_of_a_trace_equal_the_orm(db):
    services.trace_start(
        session_id="rows-2", user_query="q", agent_name="A", metadata={"deep": {"list": [1, 2.5, True]}}
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_columns(AgentTrace)} FROM {AgentTrace._meta.db_table} WHERE session_id = %s", ["rows-2"]
        )
        (loaded,) = from_rows(AgentTrace, cursor.fetchall())
    assert _fields(loaded) == _fields(AgentTrace.objects.get(session_id="rows-2"))


def test_intent_and_complete_answer_what_the_detail_shows(api):
    api.post(
        BASE,
        data=json.dumps({"session_id": "rows-3", "user_query": "q", "agent_name": "A"}),
        content_type="application/json",
    )
    for i in range(3):
        api.post(
            f"{BASE}/rows-3/tool-calls",
            data=json.dumps(
                {"tool_name": f"t{i}", "tool_args": {"i": i}, "tool_result": {"r": [i]}, "call_id": f"c{i}"}
            ),
            content_type="application/json",
        )
    intent = api.post(
        f"{BASE}/rows-3/intent",
        data=json.dumps({"intent": "i", "resource_type": "r", "operation": "o"}),
        content_type="application/json",
    )
    assert intent.status_code == 200
    assert intent.json() == api.get("/api/v1/metrics/trace/rows-3").json()
    complete = api.post(
        f"{BASE}/rows-3/complete",
        data=json.dumps({"final_response": "done", "success": True}),
        content_type="application/json",
    )
    assert complete.status_code == 200
    assert complete.json() == api.get("/api/v1/metrics/trace/rows-3").json()
    assert [c["seq"] for c in complete.json()["tool_calls"]] == [1, 2, 3]


def test_ingestion_calls_do_not_build_request_headers(api, monkeypatch):
    """request.headers parses every header into a dict on first use; the per-call path reads the
    few it needs (Authorization, Idempotency-Key, Content-Length) from META, so it is never built."""
    from django.http.request import HttpHeaders

    built = []
    original = HttpHeaders.__init__
    monkeypatch.setattr(HttpHeaders, "__init__", lambda self, environ: (built.append(1), original(self, environ))[1])
    api.post(
        BASE,
        data=json.dumps({"session_id": "rows-4", "user_query": "q", "agent_name": "A"}),
        content_type="application/json",
    )
    response = api.post(
        f"{BASE}/rows-4/tool-calls",
        data=json.dumps({"tool_name": "t"}),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert response.status_code == 201
    retry = api.post(
        f"{BASE}/rows-4/tool-calls",
        data=json.dumps({"tool_name": "t"}),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert retry.status_code == 200 and retry.json()["tool_calls"][0]["seq"] == 1
    assert built == []
