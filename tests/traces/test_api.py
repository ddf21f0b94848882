import pytest
from drf_spectacular.generators import SchemaGenerator

from apps.traces.api.schemas import MAX_IDEMPOTENCY_KEY_LENGTH
from apps.traces.models import AgentTrace, ToolCall

BASE = "/api/v1/metrics"


def start(client, session_id="s1", **extra):
    body = {
        "session_id": session_id,
        "user_query": "List clusters in Delhi",
        "agent_name": "OrchestratorAgent",
        **extra,
    }
    return client.post(f"{BASE}/traces", body, format="json")


def tool_call(**extra):
    return {
        "tool_name": "list_k8s_clusters",
        "tool_args": {"datacenter": "Delhi"},
        "tool_result": [{"name": "prod-01"}],
        "success": True,
        **extra,
    }


@pytest.mark.django_db
class TestLifecycle:
    def test_full_lifecycle_gives_the_contract_trace_shape(self, api):
        assert start(api).status_code == 201
        r = api.post(
            f"{BASE}/traces/s1/intent",
            {"intent": "list_k8s_cluster", "resource_type": "k8s_cluster", "operation": "list"},
            format="json",
        )
        assert r.status_code == 200
        r = api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="c1", duration_ms=12.5), format="json")
        assert r.status_code == 201
        assert r.json()["tool_calls"][0]["seq"] == 1 and r.json()["tool_calls"][0]["created"] is True
        r = api.post(
            f"{BASE}/traces/s1/complete", {"final_response": "Found 1 cluster: prod-01", "success": True}, format="json"
        )
        assert r.status_code == 200

        body = api.get(f"{BASE}/trace/s1").json()
        contract_fields = {
            "session_id",
            "user_query",
            "agent_name",
            "intent_detected",
            "resource_type",
            "operation",
            "tool_calls",
            "final_response",
            "success",
            "start_time",
            "end_time",
        }
        assert contract_fields <= set(body)
        assert body["intent_detected"] == "list_k8s_cluster"
        assert body["operation"] == "list"
        assert body["status"] == "completed"
        assert body["success"] is True
        assert body["end_time"] is not None
        call = body["tool_calls"][0]
        assert {"tool_name", "tool_args", "tool_result", "timestamp", "success"} <= set(call)
        assert call["tool_args"] == {"datacenter": "Delhi"}
        assert call["tool_result"] == [{"name": "prod-01"}]
        assert call["duration_ms"] == 12.5

    def test_failed_completion_marks_the_trace_failed(self, api):
        start(api)
        r = api.post(
            f"{BASE}/traces/s1/complete",
            {"final_response": None, "success": False, "error": "LLM timeout"},
            format="json",
        )
        assert r.status_code == 200
        assert r.json()["status"] == "failed" and r.json()["error"] == "LLM timeout"

    def test_list_of_tool_calls_keeps_order(self, api):
        start(api)
        calls = [tool_call(tool_name=f"tool_{i}", call_id=f"c{i}") for i in range(5)]
        r = api.post(f"{BASE}/traces/s1/tool-calls", calls, format="json")
        assert r.status_code == 201
        assert [c["tool_name"] for c in r.json()["tool_calls"]] == [f"tool_{i}" for i in range(5)]
        assert [c["seq"] for c in api.get(f"{BASE}/trace/s1").json()["tool_calls"]] == [1, 2, 3, 4, 5]

    def test_unicode_round_trips(self, api):
        query = "Liste les clusters à Delhi 🚀 — 集群 दिल्ली"
        assert start(api, user_query=query).status_code == 201
        api.post(
            f"{BASE}/traces/s1/tool-calls", tool_call(tool_args={"ville": "Zürich", "标签": "生产"}), format="json"
        )
        body = api.get(f"{BASE}/trace/s1").json()
        assert body["user_query"] == query
        assert body["tool_calls"][0]["tool_args"] == {"ville": "Zürich", "标签": "生产"}

    def test_unknown_session_is_404_everywhere(self, api):
        for path, body in [
            ("intent", {"intent": "x"}),
            ("tool-calls", tool_call()),
            ("complete", {"final_response": "x", "success": True}),
        ]:
            r = api.post(f"{BASE}/traces/ghost/{path}", body, format="json")
            assert r.status_code == 404, path
            assert r.json() == {"detail": "No trace found for session ghost"}
        assert api.get(f"{BASE}/trace/ghost").json() == {"detail": "No trace found for session ghost"}


@pytest.mark.django_db
class TestIdempotency:
    def test_start_twice_is_one_trace(self, api):
        assert start(api).status_code == 201
        assert start(api).status_code == 200
        assert AgentTrace.objects.count() == 1

    def test_start_with_different_query_conflicts(self, api):
        start(api)
        r = start(api, user_query="something else")
        assert r.status_code == 409 and "different" in r.json()["detail"]

    def test_tool_call_retry_with_call_id_records_once(self, api):
        start(api)
        first = api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="abc"), format="json")
        retry = api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="abc"), format="json")
        assert first.status_code == 201 and retry.status_code == 200
        assert retry.json()["tool_calls"][0]["created"] is False
        assert ToolCall.objects.count() == 1

    def test_tool_call_retry_with_idempotency_key_records_once(self, api):
        start(api)
        calls = [tool_call(tool_name="a"), tool_call(tool_name="b")]
        api.post(f"{BASE}/traces/s1/tool-calls", calls, format="json", HTTP_IDEMPOTENCY_KEY="req-1")
        api.post(f"{BASE}/traces/s1/tool-calls", calls, format="json", HTTP_IDEMPOTENCY_KEY="req-1")
        assert list(ToolCall.objects.values_list("tool_name", flat=True)) == ["a", "b"]

    def test_same_call_id_with_different_content_conflicts(self, api):
        start(api)
        api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="abc"), format="json")
        r = api.post(
            f"{BASE}/traces/s1/tool-calls", tool_call(call_id="abc", tool_args={"datacenter": "Pune"}), format="json"
        )
        assert r.status_code == 409
        assert ToolCall.objects.count() == 1

    def test_complete_twice_same_is_ok_different_is_409(self, api):
        start(api)
        done = {"final_response": "ok", "success": True}
        assert api.post(f"{BASE}/traces/s1/complete", done, format="json").status_code == 200
        assert api.post(f"{BASE}/traces/s1/complete", done, format="json").status_code == 200
        r = api.post(f"{BASE}/traces/s1/complete", {"final_response": "changed", "success": True}, format="json")
        assert r.status_code == 409
        assert AgentTrace.objects.get().final_response == "ok"

    def test_completed_trace_refuses_new_tool_calls_but_accepts_retries(self, api):
        start(api)
        api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="c1"), format="json")
        api.post(f"{BASE}/traces/s1/complete", {"final_response": "ok", "success": True}, format="json")
        assert api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="c1"), format="json").status_code == 200
        r = api.post(f"{BASE}/traces/s1/tool-calls", tool_call(call_id="c2"), format="json")
        assert r.status_code == 409
        assert api.post(f"{BASE}/traces/s1/intent", {"intent": "other"}, format="json").status_code == 409
        assert ToolCall.objects.count() == 1


@pytest.mark.django_db
class TestBadInput:
    @pytest.mark.parametrize(
        "body, field",
        [
            ({"user_query": "q", "agent_name": "a"}, "session_id"),
            ({"session_id": "s", "agent_name": "a"}, "user_query"),
            ({"session_id": 123, "user_query": "q", "agent_name": "a"}, "session_id"),
            ({"session_id": "s", "user_query": ["q"], "agent_name": "a"}, "user_query"),
            ({"session_id": "   ", "user_query": "q", "agent_name": "a"}, "session_id"),
            ({"session_id": "s" * 256, "user_query": "q", "agent_name": "a"}, "session_id"),
            ({"session_id": "s", "user_query": "q", "agent_name": "a", "metadata": "not an object"}, "metadata"),
            ({"session_id": "s", "user_query": "q\u0000", "agent_name": "a"}, "user_query"),
        ],
    )
    def test_start_rejects_with_422_and_field_errors(self, api, body, field):
        r = api.post(f"{BASE}/traces", body, format="json")
        assert r.status_code == 422
        assert field in {err["loc"][0] for err in r.json()["detail"]}
        assert AgentTrace.objects.count() == 0

    def test_body_that_is_not_an_object_is_422(self, api):
        assert api.post(f"{BASE}/traces", [1, 2], format="json").status_code == 422

    @pytest.mark.parametrize(
        "call",
        [
            {"tool_args": {}},
            {"tool_name": "t", "success": "yes"},
            {"tool_name": "t", "tool_args": [1, 2]},
            {"tool_name": "t", "duration_ms": -1},
            {"tool_name": "t", "tool_result": {"k": "nul\u0000byte"}},
            {"tool_name": "t", "timestamp": "yesterday-ish"},
        ],
    )
    def test_bad_tool_calls_are_422_and_write_nothing(self, api, call):
        start(api)
        r = api.post(f"{BASE}/traces/s1/tool-calls", call, format="json")
        assert r.status_code == 422, r.json()
        assert ToolCall.objects.count() == 0

    def test_one_bad_call_in_a_list_writes_none_of_them(self, api):
        start(api)
        r = api.post(f"{BASE}/traces/s1/tool-calls", [tool_call(), {"tool_name": 5}], format="json")
        assert r.status_code == 422
        assert ToolCall.objects.count() == 0

    def test_empty_list_of_tool_calls_is_422(self, api):
        start(api)
        assert api.post(f"{BASE}/traces/s1/tool-calls", [], format="json").status_code == 422

    def test_duplicate_call_ids_in_one_request_are_422(self, api):
        start(api)
        r = api.post(f"{BASE}/traces/s1/tool-calls", [tool_call(call_id="x"), tool_call(call_id="x")], format="json")
        assert r.status_code == 422
        assert ToolCall.objects.count() == 0

    def test_complete_requires_success_as_boolean(self, api):
        start(api)
        r = api.post(f"{BASE}/traces/s1/complete", {"final_response": "x", "success": "true"}, format="json")
        assert r.status_code == 422

    def test_oversized_body_is_413(self, api, settings):
        settings.EVALSITE_MAX_BODY_BYTES = 10_000
        start(api)
        huge = tool_call(tool_result="x" * 20_000)
        assert api.post(f"{BASE}/traces/s1/tool-calls", huge, format="json").status_code == 413
        assert ToolCall.objects.count() == 0


@pytest.mark.django_db
class TestAuth:
    def test_every_endpoint_needs_a_key(self, anon_api, api):
        start(api)
        calls = [
            ("post", f"{BASE}/traces", {"session_id": "x", "user_query": "q", "agent_name": "a"}),
            ("post", f"{BASE}/traces/s1/intent", {"intent": "i"}),
            ("post", f"{BASE}/traces/s1/tool-calls", tool_call()),
            ("post", f"{BASE}/traces/s1/complete", {"final_response": "r", "success": True}),
            ("post", f"{BASE}/traces/batch", {"traces": []}),
            ("get", f"{BASE}/trace/s1", None),
            ("delete", f"{BASE}/trace/s1", None),
        ]
        for method, url, body in calls:
            r = getattr(anon_api, method)(url, body, format="json")
            assert r.status_code == 401, (method, url)
        assert AgentTrace.objects.count() == 1 and ToolCall.objects.count() == 0

    def test_anonymous_ingestion_when_allowed(self, anon_api, allow_anonymous):
        assert start(anon_api).status_code == 201
        assert anon_api.get(f"{BASE}/trace/s1").status_code == 200

    def test_delete_needs_staff(self, api, staff_api, anon_api, allow_anonymous):
        start(api)
        assert anon_api.delete(f"{BASE}/trace/s1").status_code == 401
        assert api.delete(f"{BASE}/trace/s1").status_code == 403
        assert AgentTrace.objects.count() == 1
        assert staff_api.delete(f"{BASE}/trace/s1").status_code == 204
        assert AgentTrace.objects.count() == 0
        assert staff_api.delete(f"{BASE}/trace/s1").status_code == 404


def batch_item(session_id, n_calls=2, **extra):
    return {
        "session_id": session_id,
        "user_query": "List clusters",
        "agent_name": "OrchestratorAgent",
        "intent_detected": "list_k8s_cluster",
        "resource_type": "k8s_cluster",
        "operation": "list",
        "tool_calls": [tool_call(tool_name=f"t{i}") for i in range(n_calls)],
        "final_response": "Found prod-01",
        "success": True,
        "start_time": "2026-01-08T10:29:55Z",
        "end_time": "2026-01-08T10:30:00Z",
        **extra,
    }


@pytest.mark.django_db
class TestBatch:
    def test_accepts_whole_traces(self, api):
        r = api.post(f"{BASE}/traces/batch", {"traces": [batch_item("b1"), batch_item("b2", n_calls=3)]}, format="json")
        assert r.status_code == 200
        assert r.json()["accepted_count"] == 2 and r.json()["rejected"] == []
        assert [a["status"] for a in r.json()["accepted"]] == ["created", "created"]
        trace = api.get(f"{BASE}/trace/b2").json()
        assert [c["tool_name"] for c in trace["tool_calls"]] == ["t0", "t1", "t2"]
        assert trace["start_time"].startswith("2026-01-08T10:29:55")
        stored = AgentTrace.objects.get(session_id="b2")
        assert stored.duration_seconds == 5.0 and stored.tool_call_count == 3 and stored.status == "completed"

    def test_partial_success_reports_index_and_reason(self, api):
        items = [
            batch_item("ok1"),
            {"session_id": "bad", "agent_name": "a"},
            "not an object",
            batch_item("late", end_time="2026-01-08T10:00:00Z"),
            batch_item("ok2"),
        ]
        r = api.post(f"{BASE}/traces/batch", {"traces": items}, format="json")
        body = r.json()
        assert r.status_code == 200
        assert [a["index"] for a in body["accepted"]] == [0, 4]
        rejected = {rej["index"]: rej for rej in body["rejected"]}
        assert set(rejected) == {1, 2, 3}
        assert "user_query" in rejected[1]["reason"] and rejected[1]["session_id"] == "bad"
        assert "end_time" in rejected[3]["reason"]
        assert set(AgentTrace.objects.values_list("session_id", flat=True)) == {"ok1", "ok2"}

    def test_retried_batch_creates_nothing_twice(self, api):
        items = [batch_item("r1"), batch_item("r2")]
        api.post(f"{BASE}/traces/batch", {"traces": items}, format="json")
        r = api.post(f"{BASE}/traces/batch", {"traces": items}, format="json")
        assert [a["status"] for a in r.json()["accepted"]] == ["unchanged", "unchanged"]
        assert AgentTrace.objects.count() == 2 and ToolCall.objects.count() == 4

    def test_same_session_with_different_content_is_rejected(self, api):
        api.post(f"{BASE}/traces/batch", {"traces": [batch_item("r1")]}, format="json")
        r = api.post(f"{BASE}/traces/batch", {"traces": [batch_item("r1", final_response="other")]}, format="json")
        assert r.json()["accepted"] == [] and "different content" in r.json()["rejected"][0]["reason"]
        assert AgentTrace.objects.get().final_response == "Found prod-01"

    def test_repeated_session_inside_one_batch(self, api):
        items = [batch_item("d1"), batch_item("d1"), batch_item("d1", final_response="changed")]
        body = api.post(f"{BASE}/traces/batch", {"traces": items}, format="json").json()
        assert [(a["index"], a["status"]) for a in body["accepted"]] == [(0, "created"), (1, "unchanged")]
        assert [r["index"] for r in body["rejected"]] == [2]

    def test_envelope_errors_are_422(self, api):
        assert api.post(f"{BASE}/traces/batch", {"traces": []}, format="json").status_code == 422
        assert api.post(f"{BASE}/traces/batch", {"items": [batch_item("x")]}, format="json").status_code == 422
        assert api.post(f"{BASE}/traces/batch", [batch_item("x")], format="json").status_code == 422
        too_many = {"traces": [batch_item(f"m{i}", n_calls=0) for i in range(1001)]}
        assert api.post(f"{BASE}/traces/batch", too_many, format="json").status_code == 422
        assert AgentTrace.objects.count() == 0

    def test_batch_trace_conflicts_with_incrementally_recorded_session(self, api):
        start(api, session_id="inc")
        r = api.post(f"{BASE}/traces/batch", {"traces": [batch_item("inc")]}, format="json")
        assert r.json()["rejected"][0]["index"] == 0


INTENT = {"intent": "list_k8s_cluster", "resource_type": "k8s_cluster", "operation": "list"}
DONE = {"final_response": "Found 1 cluster: prod-01", "success": True}


@pytest.mark.django_db
class TestIntentAndComplete:
    """The intent and complete endpoints get the same bad-input, unicode and retry checks as the others."""

    @pytest.mark.parametrize(
        "body, field",
        [
            ({}, "intent"),
            ({"resource_type": "k8s_cluster", "operation": "list"}, "intent"),
            ({"intent": 5}, "intent"),
            ({"intent": "   "}, "intent"),
            ({"intent": "i\u0000x"}, "intent"),
            ({"intent": "i" * 256}, "intent"),
            ({"intent": "i", "operation": ["list"]}, "operation"),
            ({"intent": "i", "resource_type": "r" * 256}, "resource_type"),
        ],
    )
    def test_intent_bad_input_is_422_and_changes_nothing(self, api, body, field):
        start(api)
        r = api.post(f"{BASE}/traces/s1/intent", body, format="json")
        assert r.status_code == 422
        assert field in {err["loc"][0] for err in r.json()["detail"]}
        assert AgentTrace.objects.get().intent_detected is None

    def test_intent_body_that_is_not_an_object_is_422(self, api):
        start(api)
        assert api.post(f"{BASE}/traces/s1/intent", ["list_k8s_cluster"], format="json").status_code == 422

    @pytest.mark.parametrize(
        "body, field",
        [
            ({}, "final_response"),
            ({"success": True}, "final_response"),
            ({"final_response": "x"}, "success"),
            ({"final_response": 5, "success": True}, "final_response"),
            ({"final_response": "x", "success": 1}, "success"),
            ({"final_response": "x", "success": False, "error": {"code": 1}}, "error"),
            ({"final_response": "nul\u0000", "success": True}, "final_response"),
        ],
    )
    def test_complete_bad_input_is_422_and_leaves_the_trace_active(self, api, body, field):
        start(api)
        r = api.post(f"{BASE}/traces/s1/complete", body, format="json")
        assert r.status_code == 422
        assert field in {err["loc"][0] for err in r.json()["detail"]}
        assert AgentTrace.objects.get().status == "active"

    def test_unicode_intent_and_answer_round_trip(self, api):
        start(api)
        intent = {"intent": "列出_集群", "resource_type": "कुबेरनेट्स", "operation": "liste"}
        answer = "Trouvé 1 cluster à Delhi 🚀 — 集群 prod-01"
        assert api.post(f"{BASE}/traces/s1/intent", intent, format="json").status_code == 200
        assert (
            api.post(
                f"{BASE}/traces/s1/complete", {"final_response": answer, "success": True}, format="json"
            ).status_code
            == 200
        )
        body = api.get(f"{BASE}/trace/s1").json()
        assert (body["intent_detected"], body["resource_type"], body["operation"]) == (
            intent["intent"],
            intent["resource_type"],
            intent["operation"],
        )
        assert body["final_response"] == answer

    def test_intent_retry_is_a_no_op_even_after_completion(self, api):
        start(api)
        assert api.post(f"{BASE}/traces/s1/intent", INTENT, format="json").status_code == 200
        assert api.post(f"{BASE}/traces/s1/intent", INTENT, format="json").status_code == 200
        api.post(f"{BASE}/traces/s1/complete", DONE, format="json")
        assert api.post(f"{BASE}/traces/s1/intent", INTENT, format="json").status_code == 200
        assert api.post(f"{BASE}/traces/s1/intent", {**INTENT, "operation": "delete"}, format="json").status_code == 409
        assert AgentTrace.objects.get().operation == "list"


@pytest.mark.django_db
class TestOversizedBodies:
    """413 on every ingestion endpoint, before anything is parsed or written."""

    @pytest.mark.parametrize(
        "path, body",
        [
            ("traces", {"session_id": "big", "user_query": "x" * 5000, "agent_name": "a"}),
            ("traces/s1/intent", {**INTENT, "intent": "i" * 5000}),
            ("traces/s1/tool-calls", tool_call(tool_result="x" * 5000)),
            ("traces/s1/complete", {"final_response": "x" * 5000, "success": True}),
            ("traces/batch", {"traces": [batch_item(f"b{i}") for i in range(20)]}),
        ],
    )
    def test_oversized_body_is_413_and_writes_nothing(self, api, settings, path, body):
        start(api)
        settings.EVALSITE_MAX_BODY_BYTES = 2000
        r = api.post(f"{BASE}/{path}", body, format="json")
        assert r.status_code == 413 and "too large" in r.json()["detail"]
        trace = AgentTrace.objects.get()
        assert AgentTrace.objects.count() == 1 and ToolCall.objects.count() == 0
        assert (trace.status, trace.intent_detected) == ("active", None)


@pytest.mark.django_db
class TestBatchItems:
    @pytest.mark.parametrize(
        "change, field",
        [
            ({"success": "yes"}, "success"),
            ({"session_id": 5}, "session_id"),
            ({"tool_calls": "list_k8s_clusters"}, "tool_calls"),
            ({"tool_calls": [{"tool_name": "t", "duration_ms": "fast"}]}, "tool_calls.0.duration_ms"),
            ({"start_time": "yesterday-ish"}, "start_time"),
            ({"final_response": "nul\u0000"}, "final_response"),
        ],
    )
    def test_a_badly_typed_item_is_rejected_alone(self, api, change, field):
        items = [batch_item("good"), {**batch_item("bad"), **change}]
        body = api.post(f"{BASE}/traces/batch", {"traces": items}, format="json").json()
        assert [a["session_id"] for a in body["accepted"]] == ["good"]
        assert len(body["rejected"]) == 1 and body["rejected"][0]["index"] == 1
        assert body["rejected"][0]["reason"].startswith(field)
        assert list(AgentTrace.objects.values_list("session_id", flat=True)) == ["good"]

    def test_unicode_round_trips(self, api):
        item = batch_item(
            "unicode-1",
            user_query="दिल्ली के क्लस्टर दिखाओ 🚀",
            final_response="Trouvé: prod-01 — 集群",
            tool_calls=[tool_call(tool_args={"ville": "Zürich", "标签": "生产"})],
        )
        body = api.post(f"{BASE}/traces/batch", {"traces": [item]}, format="json").json()
        assert body["accepted"][0]["status"] == "created"
        trace = api.get(f"{BASE}/trace/unicode-1").json()
        assert trace["user_query"] == item["user_query"] and trace["final_response"] == item["final_response"]
        assert trace["tool_calls"][0]["tool_args"] == {"ville": "Zürich", "标签": "生产"}


@pytest.mark.django_db
class TestPostgresEdges:
    """Requests that SQLite stored and PostgreSQL answered with a 500 (issue 12, item 6)."""

    def test_duplicate_call_id_inside_a_batch_item_rejects_that_item_only(self, api):
        # COPY raised psycopg's UniqueViolation, which is not Django's IntegrityError: the whole
        # batch was a 500 and every good trace in it was lost.
        dup = batch_item("dup", tool_calls=[tool_call(call_id="c1"), tool_call(call_id="c1", tool_name="other")])
        r = api.post(f"{BASE}/traces/batch", {"traces": [batch_item("good"), dup, batch_item("good2")]}, format="json")
        assert r.status_code == 200
        body = r.json()
        assert [a["session_id"] for a in body["accepted"]] == ["good", "good2"]
        assert [(rej["index"], rej["session_id"]) for rej in body["rejected"]] == [(1, "dup")]
        assert "c1" in body["rejected"][0]["reason"]
        assert set(AgentTrace.objects.values_list("session_id", flat=True)) == {"good", "good2"}

    def test_duplicate_call_id_in_one_tool_calls_request_is_422_naming_it(self, api):
        start(api)
        r = api.post(
            f"{BASE}/traces/s1/tool-calls",
            [tool_call(call_id="a"), tool_call(call_id="dup-7"), tool_call(call_id="dup-7")],
            format="json",
        )
        assert r.status_code == 422
        assert "dup-7" in str(r.json()["detail"])
        assert ToolCall.objects.count() == 0

    def test_long_idempotency_key_is_422_and_writes_nothing(self, api):
        # It becomes part of each call's call_id (varchar 255): PostgreSQL refused the INSERT.
        start(api)
        r = api.post(f"{BASE}/traces/s1/tool-calls", tool_call(), format="json", HTTP_IDEMPOTENCY_KEY="k" * 256)
        assert r.status_code == 422
        assert "Idempotency-Key" in str(r.json()["detail"])
        assert ToolCall.objects.count() == 0

    def test_longest_idempotency_key_is_accepted_for_the_largest_request(self, api):
        from apps.traces.api.schemas import MAX_IDEMPOTENCY_KEY_LENGTH, MAX_TOOL_CALLS_PER_REQUEST

        start(api)
        key = "k" * MAX_IDEMPOTENCY_KEY_LENGTH
        calls = [tool_call(tool_name=f"t{i}") for i in range(MAX_TOOL_CALLS_PER_REQUEST)]
        for expected in (201, 200):
            r = api.post(f"{BASE}/traces/s1/tool-calls", calls, format="json", HTTP_IDEMPOTENCY_KEY=key)
            assert r.status_code == expected
        assert ToolCall.objects.count() == MAX_TOOL_CALLS_PER_REQUEST

    @pytest.mark.parametrize("key", [" ", "a\x00b"])
    def test_blank_or_unstorable_idempotency_key_is_422(self, api, key):
        start(api)
        r = api.post(f"{BASE}/traces/s1/tool-calls", tool_call(), format="json", HTTP_IDEMPOTENCY_KEY=key)
        assert r.status_code == 422
        assert r.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]


def test_the_idempotency_header_is_documented_from_the_model_that_parses_it():
    document = SchemaGenerator().get_schema(request=None, public=True)
    operation = document["paths"]["/api/v1/metrics/traces/{session_id}/tool-calls"]["post"]
    (header,) = [p for p in operation["parameters"] if p["in"] == "header"]
    assert header["name"] == "Idempotency-Key" and not header.get("required", False)
    assert header["schema"] == {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY_LENGTH}
