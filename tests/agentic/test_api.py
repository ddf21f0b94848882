"""Every /api/v1/metrics endpoint of the agentic contract: success, bad input, auth."""

import json

import pytest
from django.db import DatabaseError

from apps.agentic.models import AgentEvaluation
from apps.traces.models import AgentTrace

from .conftest import record_trace

BASE = "/api/v1/metrics"
MANUAL_BODY = {
    "user_query": "List all Kubernetes clusters in Delhi",
    "agent_response": "Found 2 clusters in Delhi: prod-01 (running), dev-02 (stopped)",
    "tool_calls": [{"tool_name": "list_k8s_clusters", "tool_args": {"datacenter": "Delhi"},
                    "tool_result": [{"name": "prod-01"}, {"name": "dev-02"}], "success": True}],
    "detected_intent": "list_k8s_cluster",
    "resource_type": "k8s_cluster",
    "operation": "list",
}


def post(client, path, body):
    return client.post(f"{BASE}{path}", body, format="json")


# --- health ---------------------------------------------------------------------------------

def test_health(api, demo_traces):
    post(api, "/evaluate/batch", {"session_ids": demo_traces[:2]})
    body = api.get(f"{BASE}/health").json()
    assert body == {"status": "healthy", "service": "agentic_metrics", "evaluations_count": 2,
                    "database": {"status": "connected", "evaluations_stored": 2, "traces_stored": 5}}


def test_health_database_down_is_503(api, monkeypatch):
    from apps.agentic import selectors

    def down():
        raise DatabaseError("connection refused")

    monkeypatch.setattr(selectors, "evaluation_count", down)
    response = api.get(f"{BASE}/health")
    assert response.status_code == 503
    assert response.json()["status"] == "unhealthy"
    assert response.json()["database"]["status"] == "disconnected"


# --- evaluate/session -----------------------------------------------------------------------

def test_evaluate_session_contract_shape(api, demo_traces):
    response = post(api, "/evaluate/session", {"session_id": "demo_k8s_list_delhi"})
    assert response.status_code == 200
    body = response.json()
    assert body["session_id"] == "demo_k8s_list_delhi" and body["agent_name"] == "OrchestratorAgent"
    for metric in ("task_adherence", "tool_call_accuracy", "intent_resolution"):
        assert 0 <= body[metric]["score"] <= 1 and body[metric]["reasoning"] and body[metric]["status"] == "ok"
    expected = 0.4 * body["task_adherence"]["score"] + 0.3 * body["tool_call_accuracy"]["score"] \
        + 0.3 * body["intent_resolution"]["score"]
    assert body["overall_score"] == pytest.approx(expected, abs=1e-4)
    assert body["judge"] == "heuristic:v1" and body["token_usage"] is None and body["reused"] is False
    assert body["rating"] == "excellent" and "timestamp" in body and isinstance(body["metadata"], dict)
    row = AgentEvaluation.objects.get()
    assert row.trace.session_id == "demo_k8s_list_delhi"


def test_evaluate_session_unknown_is_404_with_contract_message(api):
    response = post(api, "/evaluate/session", {"session_id": "openwebui_abc123def456"})
    assert response.status_code == 404
    assert response.json() == {"detail": "No trace found for session openwebui_abc123def456"}


def test_evaluate_active_trace_is_409(api, db):
    record_trace("still-running", complete=False)
    assert post(api, "/evaluate/session", {"session_id": "still-running"}).status_code == 409


@pytest.mark.parametrize("body", [{}, {"session_id": ""}, {"session_id": 5}, {"session_id": "a\x00b"},
                                  {"session_id": "x", "force": "yes"}, {"session_id": "x", "judge": "oracle"},
                                  {"session_id": "x", "unknown": 1}, {"session_id": "x" * 300}])
def test_evaluate_session_bad_input_is_422(api, body):
    response = post(api, "/evaluate/session", body)
    assert response.status_code == 422 and "detail" in response.json()


def test_evaluate_session_unparseable_json_is_422(api):
    response = api.post(f"{BASE}/evaluate/session", b"{not json", content_type="application/json")
    assert response.status_code == 422


def test_llm_asked_for_without_llm_is_422(api, demo_traces):
    response = post(api, "/evaluate/session", {"session_id": demo_traces[0], "judge": "llm"})
    assert response.status_code == 422 and "no LLM is configured" in response.json()["detail"]


def test_unchanged_trace_same_judge_is_reused_unless_forced(api, demo_traces):
    first = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    again = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    assert again["reused"] is True and again["evaluation_id"] == first["evaluation_id"]
    forced = post(api, "/evaluate/session", {"session_id": demo_traces[0], "force": True}).json()
    assert forced["reused"] is False and forced["evaluation_id"] != first["evaluation_id"]
    assert AgentEvaluation.objects.count() == 2


# --- the LLM path through the API ------------------------------------------------------------

def _push_valid(server, level=5):
    server.push_json({"explanation": "ok", "actual_user_intent": "i", "agent_perceived_intent": "i",
                      "intent_correctly_identified": True, "intent_resolved": True, "resolution_level": level})
    server.push_text('Verdict follows: {"explanation": "ok", "applicable": true, "per_call": [], '
                     '"missing_tool_calls": 0, "excess_tool_calls": 0, "accuracy_level": %d} -- end' % level)
    server.push_text('```json\n{"explanation": "ok", "goal_adherence": true, "rule_adherence": true, '
                     '"procedural_adherence": true, "unsupported_claims": [], "adherence_level": %d}\n```' % level)


def test_llm_judge_valid_and_reuse_skips_the_llm(api, demo_traces, openai_server):
    _push_valid(openai_server, level=4)
    body = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    assert body["judge"] == "openai:judge-model"
    assert body["overall_score"] == 0.75 and body["rating"] == "good"
    assert body["token_usage"] == {"prompt_tokens": 33, "completion_tokens": 21, "total_tokens": 54}
    assert len(openai_server.chat_requests) == 3
    again = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    assert again["reused"] is True and len(openai_server.chat_requests) == 3
    row = AgentEvaluation.objects.get()
    assert (row.prompt_tokens, row.completion_tokens, row.total_tokens) == (33, 21, 54)


def test_llm_garbage_stores_error_status_not_a_number(api, demo_traces, openai_server):
    openai_server.default = "I would rate this quite highly."
    body = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    for metric in ("task_adherence", "tool_call_accuracy", "intent_resolution"):
        assert body[metric]["status"] == "error" and body[metric]["score"] is None
        assert "3 attempts" in body[metric]["reasoning"]
    assert body["overall_score"] is None and body["rating"] is None
    # An errored evaluation is never reused: the next request asks the LLM again.
    _push_valid(openai_server)
    retry = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    assert retry["reused"] is False and retry["overall_score"] == 1.0


def test_llm_429_then_success_is_retried(api, demo_traces, openai_server):
    openai_server.push_error(429, "slow down")
    _push_valid(openai_server)
    body = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    assert body["overall_score"] == 1.0
    assert len(openai_server.chat_requests) == 4


def test_llm_timeout_is_an_error_status(api, demo_traces, openai_server, settings):
    settings.EVALSITE_LLM_TIMEOUT_SECONDS = 0.2
    for _ in range(3):
        openai_server.push_delay(1.0, {"late": True})
    _push_valid(openai_server)
    body = post(api, "/evaluate/session", {"session_id": demo_traces[0]}).json()
    assert body["intent_resolution"]["status"] == "error" and "timed out" in body["intent_resolution"]["reasoning"]
    assert body["tool_call_accuracy"]["status"] == "ok"
    assert body["overall_score"] is None


# --- evaluate/manual -------------------------------------------------------------------------

def test_manual_evaluation_contract_example(api):
    response = post(api, "/evaluate/manual", MANUAL_BODY)
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"task_adherence", "tool_call_accuracy", "intent_resolution", "overall_score",
                         "evaluation_timestamp", "session_id"}
    assert body["session_id"].startswith("manual_")
    history = api.get(f"{BASE}/history/{body['session_id']}").json()
    assert history["overall_score"] == body["overall_score"] and history["source"] == "manual"
    row = AgentEvaluation.objects.get()
    assert row.trace is None and row.input["user_query"] == MANUAL_BODY["user_query"] and row.agent_name == "manual"


def test_manual_evaluations_get_distinct_session_ids(api):
    first = post(api, "/evaluate/manual", MANUAL_BODY).json()
    second = post(api, "/evaluate/manual", MANUAL_BODY).json()
    assert first["session_id"] != second["session_id"]


@pytest.mark.parametrize("change", [
    {"user_query": None}, {"user_query": "  "}, {"tool_calls": "list_k8s_clusters"},
    {"tool_calls": [{"tool_args": {}}]}, {"tool_calls": [{"tool_name": "x", "success": "yes"}]},
    {"agent_response": 42}, {"operation": "x" * 300}
])
def test_manual_bad_input_is_422_and_writes_nothing(api, change):
    response = post(api, "/evaluate/manual", {**MANUAL_BODY, **change})
    assert response.status_code == 422
    assert AgentEvaluation.objects.count() == 0


def test_manual_lone_surrogate_is_422(api):
    raw = json.dumps({**MANUAL_BODY, "user_query": "x"}).replace('"x"', '"bad \\ud800 surrogate"').encode()
    response = api.post(f"{BASE}/evaluate/manual", raw, content_type="application/json")
    assert response.status_code == 422
    assert AgentEvaluation.objects.count() == 0


def test_manual_unicode_is_kept(api):
    body = {**MANUAL_BODY, "user_query": "Liste les clusters à Délhi 🚀", "agent_response": "Voici: prod-01, dev-02 ✅"}
    evaluation = post(api, "/evaluate/manual", body).json()
    assert api.get(f"{BASE}/history/{evaluation['session_id']}").json()["user_query"] == body["user_query"]


# --- evaluate/batch --------------------------------------------------------------------------

def test_batch_contract_shape(api, demo_traces):
    body = post(api, "/evaluate/batch", {"session_ids": [demo_traces[0], demo_traces[1], "session_003"]}).json()
    assert body["evaluated"] == 2 and body["not_found"] == 1 and body["missing_sessions"] == ["session_003"]
    first = body["results"][0]
    assert first["session_id"] == demo_traces[0]
    assert {"agent_name", "task_adherence", "tool_call_accuracy", "intent_resolution", "overall_score"} <= set(first)
    assert isinstance(first["task_adherence"], float)


def test_batch_duplicates_and_active(api, demo_traces):
    record_trace("active-one", complete=False)
    body = post(api, "/evaluate/batch", {"session_ids": [demo_traces[0], demo_traces[0], "active-one"]}).json()
    assert body["evaluated"] == 1
    assert body["skipped_sessions"][0]["session_id"] == "active-one"


def test_batch_over_500_is_422(api):
    response = post(api, "/evaluate/batch", {"session_ids": [f"s{i}" for i in range(501)]})
    assert response.status_code == 422


@pytest.mark.parametrize("body", [{}, {"session_ids": []}, {"session_ids": "abc"}, {"session_ids": [1, 2]},
                                  {"session_ids": [""]}])
def test_batch_bad_input_is_422(api, body):
    assert post(api, "/evaluate/batch", body).status_code == 422


def test_batch_llm_judge_runs_concurrently_and_keeps_order(api, db, openai_server, settings):
    settings.EVALSITE_AGENTIC_CONCURRENCY = 3
    ids = [f"batch-{i}" for i in range(6)]
    for session_id in ids:
        record_trace(session_id)

    def reply(body):
        from tests.fakes.openai_server import completion_body

        system = body["messages"][0]["content"]
        if "INTENT RESOLUTION" in system:
            content = {"explanation": "e", "actual_user_intent": "i", "agent_perceived_intent": "i",
                       "intent_correctly_identified": True, "intent_resolved": True, "resolution_level": 5}
        elif "TOOL CALL ACCURACY" in system:
            content = {"explanation": "e", "applicable": True, "per_call": [], "missing_tool_calls": 0,
                       "excess_tool_calls": 0, "accuracy_level": 3}
        else:
            content = {"explanation": "e", "goal_adherence": True, "rule_adherence": True,
                       "procedural_adherence": True, "unsupported_claims": [], "adherence_level": 5}
        return 200, completion_body(body["model"], json.dumps(content)), None

    for _ in range(18):
        openai_server.push(reply)
    body = post(api, "/evaluate/batch", {"session_ids": ids}).json()
    assert [r["session_id"] for r in body["results"]] == ids
    assert all(r["tool_call_accuracy"] == 0.5 and r["overall_score"] == 0.85 for r in body["results"])
    assert len(openai_server.chat_requests) == 18


# --- summary ---------------------------------------------------------------------------------

def test_summary_is_computed_from_the_rows(api, demo_traces):
    assert api.get(f"{BASE}/summary").json()["total_evaluations"] == 0
    post(api, "/evaluate/batch", {"session_ids": demo_traces})
    post(api, "/evaluate/manual", MANUAL_BODY)
    body = api.get(f"{BASE}/summary").json()
    rows = list(AgentEvaluation.objects.all())
    assert body["total_evaluations"] == 6
    assert sum(body["score_distribution"].values()) == 6
    assert set(body["score_distribution"]) == {"excellent", "good", "acceptable", "poor", "failed"}
    assert body["average_scores"]["overall"] == pytest.approx(sum(r.overall_score for r in rows) / 6, abs=1e-4)
    assert body["by_agent"]["OrchestratorAgent"]["count"] == 3
    assert body["by_agent"]["manual"]["count"] == 1
    assert body["by_operation"]["list"]["count"] == 3
    orchestrator = [r.overall_score for r in rows if r.agent_name == "OrchestratorAgent"]
    assert body["by_agent"]["OrchestratorAgent"]["avg_score"] == pytest.approx(sum(orchestrator) / 3, abs=1e-4)


# --- export ----------------------------------------------------------------------------------

def test_export_json_and_jsonl(api, demo_traces):
    post(api, "/evaluate/batch", {"session_ids": demo_traces})
    as_json = api.get(f"{BASE}/export", {"format": "json"}).json()
    assert as_json["format"] == "json"
    rows = json.loads(as_json["data"])
    assert len(rows) == 5 and {"session_id", "task_adherence", "overall_score", "judge"} <= set(rows[0])
    as_jsonl = api.get(f"{BASE}/export?format=jsonl").json()
    lines = as_jsonl["data"].split("\n")
    assert as_jsonl["format"] == "jsonl" and [json.loads(line) for line in lines] == rows
    assert api.get(f"{BASE}/export").json()["format"] == "json"


def test_export_streamed(api, demo_traces):
    post(api, "/evaluate/batch", {"session_ids": demo_traces})
    response = api.get(f"{BASE}/export?format=jsonl&stream=1")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().strip().split("\n")
    assert len(lines) == 5 and json.loads(lines[0])["session_id"]
    array = b"".join(api.get(f"{BASE}/export?format=json&stream=true").streaming_content)
    assert len(json.loads(array)) == 5


def test_export_streamed_empty(api):
    assert json.loads(b"".join(api.get(f"{BASE}/export?format=json&stream=1").streaming_content)) == []


@pytest.mark.parametrize("query", ["format=csv", "format=", "format=JSON", "format=json&stream=maybe"])
def test_export_bad_format_is_422(api, query):
    response = api.get(f"{BASE}/export?{query}")
    assert response.status_code == 422


# --- history ---------------------------------------------------------------------------------

def test_history_pages_newest_first_with_filters(api, demo_traces):
    post(api, "/evaluate/batch", {"session_ids": demo_traces})
    body = api.get(f"{BASE}/history?limit=2").json()
    assert body["count"] == 2 and body["limit"] == 2 and body["offset"] == 0 and body["has_more"] is True
    newest = AgentEvaluation.objects.order_by("-created_at", "-id")
    assert [e["evaluation_id"] for e in body["evaluations"]] == [e.id for e in newest[:2]]
    page = api.get(f"{BASE}/history?limit=2&offset=4").json()
    assert page["count"] == 1 and page["has_more"] is False
    by_agent = api.get(f"{BASE}/history?agent_name=OrchestratorAgent").json()
    assert by_agent["count"] == 3 and {e["agent_name"] for e in by_agent["evaluations"]} == {"OrchestratorAgent"}
    assert api.get(f"{BASE}/history?operation=list").json()["count"] == 2
    good = api.get(f"{BASE}/history?min_score=0.8").json()
    assert all(e["overall_score"] >= 0.8 for e in good["evaluations"])
    assert good["count"] == sum(1 for e in newest if e.overall_score >= 0.8)
    evaluation = body["evaluations"][0]
    assert "task_adherence_reasoning" in evaluation and "timestamp" in evaluation


@pytest.mark.parametrize("query", ["limit=0", "limit=501", "limit=abc", "offset=-1", "min_score=1.5",
                                   "min_score=-0.1", "min_score=nan", "limit=1.5"])
def test_history_out_of_range_is_422(api, query):
    assert api.get(f"{BASE}/history?{query}").status_code == 422


def test_history_detail_latest_flat(api, demo_traces):
    post(api, "/evaluate/session", {"session_id": demo_traces[0]})
    latest = post(api, "/evaluate/session", {"session_id": demo_traces[0], "force": True}).json()
    body = api.get(f"{BASE}/history/{demo_traces[0]}").json()
    assert body["evaluation_id"] == latest["evaluation_id"]
    for key in ("task_adherence", "task_adherence_reasoning", "tool_call_accuracy", "tool_call_accuracy_reasoning",
                "intent_resolution", "intent_resolution_reasoning", "overall_score", "timestamp", "agent_name"):
        assert key in body
    assert api.get(f"{BASE}/history/never-evaluated").status_code == 404


# --- clear -----------------------------------------------------------------------------------

def test_clear_is_staff_only_and_clears_both(api, staff_api, anon_api, allow_anonymous, demo_traces):
    post(api, "/evaluate/batch", {"session_ids": demo_traces})
    assert api.delete(f"{BASE}/clear").status_code == 403
    assert anon_api.delete(f"{BASE}/clear").status_code in (401, 403)
    assert AgentEvaluation.objects.count() == 5
    response = staff_api.delete(f"{BASE}/clear")
    assert response.status_code == 200
    assert response.json() == {"message": "All traces and evaluation results cleared", "evaluations_deleted": 5,
                               "traces_deleted": 5}
    assert AgentEvaluation.objects.count() == 0 and AgentTrace.objects.count() == 0


def test_clear_is_all_or_nothing(staff_api, demo_traces, monkeypatch):
    from apps.agentic import services

    post(staff_api, "/evaluate/batch", {"session_ids": demo_traces})

    def broken():
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "traces_clear", broken)
    staff_api.raise_request_exception = False
    assert staff_api.delete(f"{BASE}/clear").status_code == 500
    assert AgentEvaluation.objects.count() == 5


# --- auth ------------------------------------------------------------------------------------

ENDPOINTS = [("get", "/health", None), ("post", "/evaluate/session", {"session_id": "x"}),
             ("post", "/evaluate/manual", MANUAL_BODY), ("post", "/evaluate/batch", {"session_ids": ["x"]}),
             ("get", "/summary", None), ("get", "/export?format=json", None), ("get", "/history", None),
             ("get", "/history/x", None), ("delete", "/clear", None)]


@pytest.mark.parametrize("method, path, body", ENDPOINTS)
def test_no_key_is_401(anon_api, method, path, body):
    response = getattr(anon_api, method)(f"{BASE}{path}", body, format="json")
    assert response.status_code == 401


def test_contract_curl_examples_work_anonymously_when_allowed(anon_api, allow_anonymous, demo_traces):
    assert anon_api.get(f"{BASE}/health").status_code == 200
    assert post(anon_api, "/evaluate/session", {"session_id": "demo_k8s_list_delhi"}).status_code == 200
    assert post(anon_api, "/evaluate/manual", MANUAL_BODY).status_code == 200
    batch = post(anon_api, "/evaluate/batch", {"session_ids": ["demo_vm_create_mumbai", "session_002", "session_003"]})
    assert batch.status_code == 200 and batch.json()["not_found"] == 2
    assert anon_api.get(f"{BASE}/summary").status_code == 200
    assert anon_api.get(f"{BASE}/trace/demo_k8s_list_delhi").status_code == 200
    assert anon_api.get(f"{BASE}/export?format=json").status_code == 200
    assert anon_api.get(f"{BASE}/export?format=jsonl").status_code == 200
    for query in ("limit=10", "agent_name=OrchestratorAgent", "min_score=0.8", "limit=10&offset=20"):
        assert anon_api.get(f"{BASE}/history?{query}").status_code == 200
    assert anon_api.get(f"{BASE}/history/demo_k8s_list_delhi").status_code == 200
    # Destructive: never anonymous.
    assert anon_api.delete(f"{BASE}/clear").status_code in (401, 403)


def test_endpoints_are_in_the_openapi_schema(api):
    schema = api.get("/api/schema/?format=json").json()
    for path in ("/health", "/evaluate/session", "/evaluate/manual", "/evaluate/batch", "/summary", "/export",
                 "/history", "/history/{session_id}", "/clear"):
        assert f"/api/v1/metrics{path}" in schema["paths"]
