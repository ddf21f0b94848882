import json
from unittest import mock

import pytest
from django.db import DatabaseError, connection

from apps.agentic.models import AgentEvaluation
from apps.traces.models import AgentTrace

BASE = "/api/v1/metrics"
CONTRACT_MANUAL = {
    "user_query": "List all Kubernetes clusters in Delhi",
    "agent_response": "Found 2 clusters in Delhi: prod-01 (running), dev-02 (stopped)",
    "tool_calls": [
        {
            "tool_name": "list_k8s_clusters",
            "tool_args": {"datacenter": "Delhi"},
            "tool_result": [{"name": "prod-01"}, {"name": "dev-02"}],
            "success": True,
        }
    ],
    "detected_intent": "list_k8s_cluster",
    "resource_type": "k8s_cluster",
    "operation": "list",
}
ALL_DEMO = [
    "demo_k8s_list_delhi",
    "demo_vm_create_mumbai",
    "demo_k8s_delete_failed",
    "demo_billing_wrong_tool",
    "demo_lb_list_bangalore",
]


def evaluate_all(client):
    response = client.post(f"{BASE}/evaluate/batch", {"session_ids": ALL_DEMO}, format="json")
    assert response.status_code == 200
    return response.json()


# --- the contract's curl examples, with a key and anonymously -----------------------------------


def contract_calls(client):
    calls = [
        ("get", f"{BASE}/health", None),
        ("post", f"{BASE}/evaluate/session", {"session_id": "demo_k8s_list_delhi"}),
        ("post", f"{BASE}/evaluate/manual", CONTRACT_MANUAL),
        (
            "post",
            f"{BASE}/evaluate/batch",
            {"session_ids": ["demo_k8s_list_delhi", "demo_vm_create_mumbai", "session_003"]},
        ),
        ("get", f"{BASE}/summary", None),
        ("get", f"{BASE}/trace/demo_k8s_list_delhi", None),
        ("get", f"{BASE}/export?format=json", None),
        ("get", f"{BASE}/export?format=jsonl", None),
        ("get", f"{BASE}/history?limit=10", None),
        ("get", f"{BASE}/history?agent_name=OrchestratorAgent", None),
        ("get", f"{BASE}/history?min_score=0.8", None),
        ("get", f"{BASE}/history?limit=10&offset=20", None),
        ("get", f"{BASE}/history/demo_k8s_list_delhi", None),
    ]
    return [
        getattr(client, method)(url, body, format="json") if body else getattr(client, method)(url)
        for method, url, body in calls
    ]


def test_contract_examples_with_a_key(api, demo_traces):
    assert [r.status_code for r in contract_calls(api)] == [200] * 13


def test_contract_examples_anonymously_when_allowed(anon_api, demo_traces, allow_anonymous):
    assert [r.status_code for r in contract_calls(anon_api)] == [200] * 13
    # Destructive even so: never anonymous.
    assert anon_api.delete(f"{BASE}/clear").status_code == 401


def test_without_a_key_everything_is_401(anon_api, demo_traces):
    assert {r.status_code for r in contract_calls(anon_api)} == {401}
    assert anon_api.delete(f"{BASE}/clear").status_code == 401


# --- health -------------------------------------------------------------------------------------


def test_health_counts(api, demo_traces):
    evaluate_all(api)
    body = api.get(f"{BASE}/health").json()
    assert body == {
        "status": "healthy",
        "service": "agentic_metrics",
        "evaluations_count": 5,
        "database": {"status": "connected", "evaluations_stored": 5, "traces_stored": 5},
    }


def test_health_is_503_when_the_database_is_down(api):
    with mock.patch(
        "apps.agentic.selectors.project_evaluations",
        side_effect=DatabaseError("connection to server at 10.0.0.5 failed for user admin"),
    ):
        response = api.get(f"{BASE}/health")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy" and body["database"]["status"] == "disconnected"
    assert "10.0.0.5" not in response.content.decode()


def test_health_is_503_when_the_database_fails_while_checking_the_api_key(api):
    # The usual case in production: clients send their key, and its lookup is the first query to fail.
    with mock.patch(
        "apps.core.auth.authentication.ApiKey.objects.active",
        side_effect=DatabaseError("connection to server at 10.0.0.5 failed"),
    ):
        response = api.get(f"{BASE}/health")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unhealthy",
        "service": "agentic_metrics",
        "evaluations_count": None,
        "database": {"status": "disconnected"},
    }
    assert "10.0.0.5" not in response.content.decode()


def test_health_still_needs_a_key_when_the_database_is_up(anon_api):
    assert anon_api.get(f"{BASE}/health").status_code == 401


# --- evaluate/session ---------------------------------------------------------------------------


def test_evaluate_session_contract_shape(api, demo_traces):
    response = api.post(f"{BASE}/evaluate/session", {"session_id": "demo_k8s_list_delhi"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["session_id"] == "demo_k8s_list_delhi" and body["agent_name"] == "OrchestratorAgent"
    for metric in ("task_adherence", "tool_call_accuracy", "intent_resolution"):
        assert set(body[metric]) == {"score", "reasoning", "status"}
        assert 0 <= body[metric]["score"] <= 1 and body[metric]["reasoning"]
    expected = round(
        0.4 * body["task_adherence"]["score"]
        + 0.3 * body["tool_call_accuracy"]["score"]
        + 0.3 * body["intent_resolution"]["score"],
        4,
    )
    assert body["overall_score"] == pytest.approx(expected, abs=1e-4)
    assert body["judge"] == "heuristic:v1" and body["rating"] == "excellent"
    assert body["token_usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert body["metadata"] == {"source": "demo"} and body["timestamp"]


def test_evaluate_unknown_session_is_404_with_the_contract_message(api):
    response = api.post(f"{BASE}/evaluate/session", {"session_id": "openwebui_abc123def456"}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "No trace found for session openwebui_abc123def456"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"session_id": ""},
        {"session_id": 5},
        {"session_id": "a\x00b"},
        {"session_id": "x" * 256},
        {"session_id": "s", "force": "yes"},
        {"session_id": "s", "judge": "gpt"},
        ["s"],
    ],
)
def test_evaluate_session_bad_input_is_422(api, body):
    assert api.post(f"{BASE}/evaluate/session", body, format="json").status_code == 422


def test_unparseable_json_is_422(api):
    response = api.post(f"{BASE}/evaluate/session", data="{nope", content_type="application/json")
    assert response.status_code == 422


def test_reevaluating_an_unchanged_trace_reuses_it_unless_forced(api, demo_traces):
    url = f"{BASE}/evaluate/session"
    first = api.post(url, {"session_id": "demo_k8s_list_delhi"}, format="json").json()
    second = api.post(url, {"session_id": "demo_k8s_list_delhi"}, format="json").json()
    assert (first["reused"], second["reused"]) == (False, True)
    assert second["timestamp"] == first["timestamp"]
    assert AgentEvaluation.objects.count() == 1
    forced = api.post(url, {"session_id": "demo_k8s_list_delhi", "force": True}, format="json").json()
    assert forced["reused"] is False and AgentEvaluation.objects.count() == 2


def test_a_changed_trace_is_judged_again(api, db):
    from apps.traces import services

    services.trace_start(
        session_id="s-change", user_query="List all Kubernetes clusters in Delhi", agent_name="OrchestratorAgent"
    )
    services.trace_intent_record(
        session_id="s-change", intent="list_k8s_cluster", resource_type="k8s_cluster", operation="list"
    )
    url = f"{BASE}/evaluate/session"
    active = api.post(url, {"session_id": "s-change"}, format="json").json()
    services.trace_tool_call_record(
        session_id="s-change",
        tool_name="list_k8s_clusters",
        tool_args={"datacenter": "Delhi"},
        tool_result=[{"name": "prod-01"}],
        success=True,
    )
    services.trace_complete(session_id="s-change", final_response="Delhi has one cluster: prod-01.", success=True)
    done = api.post(url, {"session_id": "s-change"}, format="json").json()
    assert done["reused"] is False and done["overall_score"] > active["overall_score"]


# --- evaluate/manual ----------------------------------------------------------------------------


def test_manual_evaluation_gets_its_own_session_in_history(api, db):
    response = api.post(f"{BASE}/evaluate/manual", CONTRACT_MANUAL, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["session_id"].startswith("manual_") and body["evaluation_timestamp"]
    assert body["overall_score"] >= 0.9 and body["judge"] == "heuristic:v1"
    stored = api.get(f"{BASE}/history/{body['session_id']}").json()
    assert stored["overall_score"] == body["overall_score"] and stored["source"] == "manual"
    assert stored["agent_name"] == "manual"
    second = api.post(f"{BASE}/evaluate/manual", CONTRACT_MANUAL, format="json").json()
    assert second["session_id"] != body["session_id"]
    assert (
        AgentEvaluation.objects.get(session_id=body["session_id"]).manual_input["user_query"]
        == CONTRACT_MANUAL["user_query"]
    )


def test_manual_evaluation_of_a_bad_interaction_scores_low(api, db):
    bad = {
        **CONTRACT_MANUAL,
        "agent_response": "Sure! Anything else?",
        "tool_calls": [
            {"tool_name": "get_weather", "tool_args": {"city": "Paris"}, "tool_result": None, "success": False}
        ],
    }
    body = api.post(f"{BASE}/evaluate/manual", bad, format="json").json()
    assert body["rating"] in ("poor", "failed")
    assert "get_weather" in body["tool_call_accuracy"]["reasoning"]


@pytest.mark.parametrize(
    "change",
    [
        {"user_query": None},
        {"user_query": "   "},
        {"agent_response": 7},
        {"tool_calls": "list"},
        {"tool_calls": [{"tool_args": {}}]},
        {"tool_calls": [{"tool_name": "t", "tool_args": [1]}]},
        {"tool_calls": [{"tool_name": "t", "success": "true"}]},
        {"operation": "x" * 300},
        {"tool_calls": [{"tool_name": "t", "tool_result": {"k": "\x00"}}]},
    ],
)
def test_manual_bad_input_is_422_and_stores_nothing(api, change):
    response = api.post(f"{BASE}/evaluate/manual", {**CONTRACT_MANUAL, **change}, format="json")
    assert response.status_code == 422 and "detail" in response.json()
    assert AgentEvaluation.objects.count() == 0


def test_manual_unicode(api, db):
    body = {
        **CONTRACT_MANUAL,
        "user_query": "दिल्ली में सभी Kubernetes clusters दिखाओ 🚀",
        "agent_response": "दिल्ली: prod-01, dev-02 ✅",
    }
    response = api.post(f"{BASE}/evaluate/manual", body, format="json")
    assert response.status_code == 200


# --- evaluate/batch -----------------------------------------------------------------------------


def test_batch_contract_shape(api, demo_traces):
    body = api.post(
        f"{BASE}/evaluate/batch",
        {"session_ids": ["demo_k8s_list_delhi", "demo_vm_create_mumbai", "session_003"]},
        format="json",
    ).json()
    assert body["evaluated"] == 2 and body["not_found"] == 1 and body["missing_sessions"] == ["session_003"]
    assert [r["session_id"] for r in body["results"]] == ["demo_k8s_list_delhi", "demo_vm_create_mumbai"]
    first = body["results"][0]
    assert {
        "session_id",
        "agent_name",
        "task_adherence",
        "tool_call_accuracy",
        "intent_resolution",
        "overall_score",
    } <= set(first)
    assert isinstance(first["task_adherence"], float)


def test_batch_duplicates_and_reuse(api, demo_traces):
    ids = ["demo_k8s_list_delhi", "demo_k8s_list_delhi", "demo_lb_list_bangalore"]
    body = api.post(f"{BASE}/evaluate/batch", {"session_ids": ids}, format="json").json()
    assert body["evaluated"] == 2 and [r["reused"] for r in body["results"]] == [False, False]
    again = api.post(f"{BASE}/evaluate/batch", {"session_ids": ids}, format="json").json()
    assert [r["reused"] for r in again["results"]] == [True, True]
    assert AgentEvaluation.objects.count() == 2


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"session_ids": []},
        {"session_ids": "demo"},
        {"session_ids": [1, 2]},
        {"session_ids": [f"s{i}" for i in range(501)]},
    ],
)
def test_batch_bad_input_is_422(api, body):
    assert api.post(f"{BASE}/evaluate/batch", body, format="json").status_code == 422


def test_batch_of_500_is_accepted(api, db):
    body = api.post(f"{BASE}/evaluate/batch", {"session_ids": [f"s{i}" for i in range(500)]}, format="json").json()
    assert body["evaluated"] == 0 and body["not_found"] == 500


# --- summary ------------------------------------------------------------------------------------


def test_summary_is_computed_from_stored_evaluations(api, demo_traces):
    empty = api.get(f"{BASE}/summary").json()
    assert empty["total_evaluations"] == 0 and empty["average_scores"]["overall"] is None
    results = evaluate_all(api)["results"]
    body = api.get(f"{BASE}/summary").json()
    assert body["total_evaluations"] == 5
    overall = [r["overall_score"] for r in results]
    assert body["average_scores"]["overall"] == pytest.approx(sum(overall) / 5, abs=1e-3)
    assert sum(body["score_distribution"].values()) == 5
    assert list(body["score_distribution"]) == ["excellent", "good", "acceptable", "poor", "failed"]
    assert body["score_distribution"]["excellent"] == 3
    assert body["by_agent"]["OrchestratorAgent"]["count"] == 3
    billing = next(r for r in results if r["agent_name"] == "BillingAgent")["overall_score"]
    assert body["by_agent"]["BillingAgent"] == {"count": 1, "avg_score": pytest.approx(billing, abs=1e-4)}
    assert body["by_operation"]["list"]["count"] == 2 and set(body["by_operation"]) == {
        "list",
        "create",
        "delete",
        "get",
    }


# --- history ------------------------------------------------------------------------------------


def test_history_newest_first_with_filters_and_pages(api, demo_traces):
    for session_id in ALL_DEMO:
        api.post(f"{BASE}/evaluate/session", {"session_id": session_id}, format="json")
    body = api.get(f"{BASE}/history").json()
    assert (body["count"], body["limit"], body["offset"], body["has_more"]) == (5, 50, 0, False)
    assert [e["session_id"] for e in body["evaluations"]] == list(reversed(ALL_DEMO))
    record = body["evaluations"][0]
    assert record["task_adherence_reasoning"] and record["judge"] == "heuristic:v1" and record["timestamp"]
    page = api.get(f"{BASE}/history?limit=2&offset=1").json()
    assert [e["session_id"] for e in page["evaluations"]] == list(reversed(ALL_DEMO))[1:3] and page["has_more"]
    agent = api.get(f"{BASE}/history?agent_name=OrchestratorAgent").json()
    assert {e["agent_name"] for e in agent["evaluations"]} == {"OrchestratorAgent"} and agent["count"] == 3
    op = api.get(f"{BASE}/history?operation=list").json()
    assert {e["session_id"] for e in op["evaluations"]} == {"demo_k8s_list_delhi", "demo_lb_list_bangalore"}
    good = api.get(f"{BASE}/history?min_score=0.8").json()
    assert good["count"] == 3 and all(e["overall_score"] >= 0.8 for e in good["evaluations"])
    assert api.get(f"{BASE}/history?agent_name=Nobody").json()["evaluations"] == []


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=501",
        "limit=abc",
        "offset=-1",
        "min_score=1.5",
        "min_score=-0.1",
        "min_score=nan",
        "limit=10.5",
    ],
)
def test_history_out_of_range_is_422(api, query):
    assert api.get(f"{BASE}/history?{query}").status_code == 422


def test_history_detail_is_the_latest_flat_record(api, demo_traces):
    api.post(f"{BASE}/evaluate/session", {"session_id": "demo_k8s_delete_failed"}, format="json")
    latest = api.post(
        f"{BASE}/evaluate/session", {"session_id": "demo_k8s_delete_failed", "force": True}, format="json"
    ).json()
    body = api.get(f"{BASE}/history/demo_k8s_delete_failed").json()
    assert body["timestamp"].startswith(latest["timestamp"][:19])
    for metric in ("task_adherence", "tool_call_accuracy", "intent_resolution"):
        assert body[metric] == latest[metric]["score"]
        assert body[f"{metric}_reasoning"] == latest[metric]["reasoning"]
    missing = api.get(f"{BASE}/history/nope")
    assert missing.status_code == 404 and missing.json() == {"detail": "No evaluation found for session nope"}


# --- export -------------------------------------------------------------------------------------


def test_export_json_and_jsonl(api, demo_traces):
    evaluate_all(api)
    as_json = api.get(f"{BASE}/export?format=json").json()
    assert as_json["format"] == "json"
    rows = json.loads(as_json["data"])
    assert len(rows) == 5 and {"session_id", "overall_score", "task_adherence_reasoning", "judge"} <= set(rows[0])
    default = api.get(f"{BASE}/export").json()
    assert default["format"] == "json" and json.loads(default["data"]) == rows
    as_jsonl = api.get(f"{BASE}/export?format=jsonl").json()
    lines = as_jsonl["data"].strip().split("\n")
    assert as_jsonl["format"] == "jsonl" and [json.loads(line) for line in lines] == rows


def test_export_empty(api, db):
    assert json.loads(api.get(f"{BASE}/export?format=json").json()["data"]) == []
    assert api.get(f"{BASE}/export?format=jsonl").json()["data"] == ""


def test_export_streamed_download(api, demo_traces, monkeypatch):
    from apps.agentic.api import views

    monkeypatch.setattr(views, "EXPORT_CHUNK_ROWS", 2)  # several chunks with 5 rows
    evaluate_all(api)
    response = api.get(f"{BASE}/export?format=json&download=true")
    assert response.status_code == 200 and response.streaming
    assert "attachment" in response["Content-Disposition"]
    rows = json.loads(b"".join(response.streaming_content))
    assert len(rows) == 5
    jsonl = api.get(f"{BASE}/export?format=jsonl&download=1")
    assert jsonl["Content-Type"] == "application/x-ndjson"
    lines = b"".join(jsonl.streaming_content).decode().strip().split("\n")
    assert [json.loads(line) for line in lines] == rows


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the COPY export path is PostgreSQL's own")
def test_postgres_export_writes_the_same_records_as_the_python_path(api, demo_traces):
    from datetime import datetime

    import orjson

    from apps.agentic import selectors
    from apps.agentic.models import AgentEvaluation
    from apps.scores.models import Score

    evaluate_all(api)
    tricky = 'quotes " and \\ backslash, tab\t, newline\n, control \x01, emoji 🚀, «guillemets», 中文'
    first = AgentEvaluation.objects.order_by("id").first().pk
    AgentEvaluation.objects.filter(pk=first).update(operation=None)
    Score.objects.filter(subject_kind="agentic_evaluation", subject_id=first, key="task_adherence").update(
        reasoning=tricky
    )

    def normalized(record):
        return {**record, "timestamp": datetime.fromisoformat(record["timestamp"])}

    by_database = [
        normalized(json.loads(line)) for line in b"".join(selectors.evaluation_export_jsonl_postgres()).splitlines()
    ]
    by_python = [
        normalized(json.loads(orjson.dumps(selectors.export_record(row), default=str)))
        for row in selectors.evaluation_export_rows()
    ]
    assert len(by_database) == 5 and by_database == by_python
    assert [list(r) for r in by_database] == [list(r) for r in by_python], "same keys in the same order"
    assert any(r["task_adherence_reasoning"] == tricky for r in by_database)
    streamed = api.get(f"{BASE}/export?format=jsonl&download=true")
    assert [normalized(json.loads(line)) for line in b"".join(streamed.streaming_content).splitlines()] == by_python
    as_array = api.get(f"{BASE}/export?format=json&download=true")
    assert [normalized(r) for r in json.loads(b"".join(as_array.streaming_content))] == by_python
    inline = api.get(f"{BASE}/export?format=json").json()
    assert [normalized(r) for r in json.loads(inline["data"])] == by_python


@pytest.mark.parametrize(
    "blocks",
    [
        [],
        [b'{"a":1}\n'],
        [b'{"a":1}\n{"b":', b"2}\n", b'{"c":"x,y"}\n'],
        [b'{"a"', b":1}", b"\n", b'{"b":2}\n'],
    ],
)
def test_json_lines_blocks_become_one_json_array(blocks):
    from apps.agentic.api.views import _stream_lines

    expected = [json.loads(line) for line in b"".join(blocks).splitlines()]
    assert json.loads(b"".join(_stream_lines("json", iter(blocks)))) == expected
    assert b"".join(_stream_lines("jsonl", iter(blocks))) == b"".join(blocks)


def test_inline_export_over_the_limit_points_to_the_download(api, demo_traces, settings):
    settings.EVALSITE_AGENTIC_EXPORT_INLINE_MAX_ROWS = 3
    evaluate_all(api)
    response = api.get(f"{BASE}/export?format=json")
    assert response.status_code == 422 and "download=true" in response.json()["detail"]


@pytest.mark.parametrize("fmt", ["csv", "JSON", "", "xml"])
def test_export_other_formats_are_422(api, fmt):
    assert api.get(f"{BASE}/export?format={fmt}").status_code == 422


# --- clear --------------------------------------------------------------------------------------


def test_clear_needs_staff(api, demo_traces):
    evaluate_all(api)
    response = api.delete(f"{BASE}/clear")
    assert response.status_code == 403
    assert AgentEvaluation.objects.count() == 5 and AgentTrace.objects.count() == 5


def test_clear_deletes_traces_and_evaluations(staff_api, demo_traces):
    evaluate_all(staff_api)
    response = staff_api.delete(f"{BASE}/clear")
    assert response.status_code == 200
    assert response.json() == {"message": "All traces and evaluation results cleared"}
    assert AgentEvaluation.objects.count() == 0 and AgentTrace.objects.count() == 0


def test_clear_is_one_transaction(staff_api, demo_traces):
    evaluate_all(staff_api)
    with mock.patch("apps.agentic.services.traces_clear", side_effect=DatabaseError("boom")):
        response = staff_api.delete(f"{BASE}/clear")
    assert response.status_code == 500
    assert AgentEvaluation.objects.count() == 5 and AgentTrace.objects.count() == 5


def test_endpoints_are_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (
        "health",
        "evaluate/session",
        "evaluate/manual",
        "evaluate/batch",
        "summary",
        "export",
        "history",
        "history/{session_id}",
        "clear",
    ):
        assert f"/api/v1/metrics/{path}" in schema["paths"], path


@pytest.mark.parametrize(
    "path, body",
    [
        ("evaluate/session", {"session_id": "demo_k8s_list_delhi", "pad": "x" * 5000}),
        ("evaluate/manual", {**CONTRACT_MANUAL, "agent_response": "x" * 5000}),
        ("evaluate/batch", {"session_ids": [f"session_{i:05d}" for i in range(400)]}),
    ],
)
def test_oversized_body_is_413_and_judges_nothing(api, demo_traces, settings, path, body):
    settings.EVALSITE_MAX_BODY_BYTES = 2000
    response = api.post(f"{BASE}/{path}", body, format="json")
    assert response.status_code == 413 and "too large" in response.json()["detail"]
    assert AgentEvaluation.objects.count() == 0
