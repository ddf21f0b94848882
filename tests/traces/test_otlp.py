"""POST /v1/traces with the real OpenTelemetry SDK and OTLP/HTTP exporter as the client."""

import base64
import gzip
import json
import os
import threading
from datetime import timedelta

import httpx
import pytest
from django.db import OperationalError
from django.utils import timezone
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Status, StatusCode

from apps.core.services import api_key_create
from apps.traces.ingestion.otlp import services as otlp_services
from apps.traces.ingestion.otlp.mapping import export_records
from apps.traces.models import AgentTrace, OtlpSpan, ToolCall
from apps.traces.signals import trace_completed
from apps.traces.tasks import prune_otlp_spans

from .otlp_support import Agent, otlp_env  # noqa: F401  (fixture)

PROTOBUF = "application/x-protobuf"


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def run_agent(agent: Agent, *, conversation: str | None = "conv-1", failing_tool: bool = True, tools: int = 3) -> None:
    """What an agent instrumented by hand with the GenAI conventions records for one user query."""
    with agent.tracer.start_as_current_span("invoke_agent K8sAgent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "K8sAgent")
        if conversation:
            root.set_attribute("gen_ai.conversation.id", conversation)
        root.set_attribute("gen_ai.input.messages", _messages("user", "List the clusters in Delhi"))
        root.set_attribute("gen_ai.output.messages", _messages("assistant", "Delhi runs 3 clusters."))
        root.set_attribute("evalsite.intent", "list_k8s_cluster")
        root.set_attribute("evalsite.operation", "list")
        root.set_attribute("deployment.team", "platform")
        with agent.tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "gpt-4o")
            chat.set_attribute("gen_ai.usage.input_tokens", 120)
            chat.set_attribute("gen_ai.usage.output_tokens", 30)
        for i in range(tools):
            with agent.tracer.start_as_current_span(f"execute_tool list_clusters_{i}") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", f"list_clusters_{i}")
                tool.set_attribute("gen_ai.tool.call.id", f"call_{i}")
                tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"datacenter": "Delhi", "page": i}))
                tool.set_attribute("gen_ai.tool.call.result", json.dumps([{"name": f"prod-{i}"}]) if i else "no json")
                if failing_tool and i == tools - 1:
                    tool.set_status(Status(StatusCode.ERROR, "permission denied"))


def test_spans_in_two_exports_root_last_make_one_trace(otlp_env):
    agent = Agent()
    run_agent(agent)
    spans = agent.spans()
    assert spans[-1].parent is None  # the SDK finishes (and a BatchSpanProcessor sends) the root last
    completed: list[list[int]] = []

    def on_completed(sender, trace_ids, **kwargs):
        completed.append(trace_ids)

    trace_completed.connect(on_completed)
    try:
        assert agent.export(spans[:2]) is SpanExportResult.SUCCESS
        # Children alone are no trace yet: they wait for their root.
        assert not AgentTrace.objects.exists()
        assert OtlpSpan.objects.filter(payload__isnull=False).count() == 2
        assert agent.export(spans[2:]) is SpanExportResult.SUCCESS
    finally:
        trace_completed.disconnect(on_completed)

    trace = AgentTrace.objects.get()
    assert completed == [[trace.pk]]
    assert (trace.session_id, trace.agent_name, trace.source) == ("conv-1", "K8sAgent", "otlp")
    assert trace.user_query == "List the clusters in Delhi"
    assert trace.final_response == "Delhi runs 3 clusters."
    assert (trace.intent_detected, trace.operation, trace.status, trace.success) == (
        "list_k8s_cluster",
        "list",
        "completed",
        True,
    )
    assert trace.duration_seconds > 0
    otel = trace.metadata["otel"]
    assert otel["models"] == ["gpt-4o"] and otel["usage"] == {"input_tokens": 120, "output_tokens": 30}
    assert otel["service_name"] == "k8s-agent"
    # An attribute no mapping knows is kept, with the span it came from.
    assert {
        "span_id": spans[-1].context.span_id.to_bytes(8, "big").hex(),
        "name": "invoke_agent K8sAgent",
        "kind": "agent",
        "attributes": {"deployment.team": "platform"},
    } in otel["spans"]

    calls = list(trace.tool_calls.order_by("seq"))
    # seq is a sort key (with gaps for late calls), not a position.
    assert [(c.tool_name, c.call_id) for c in calls] == [
        ("list_clusters_0", "call_0"),
        ("list_clusters_1", "call_1"),
        ("list_clusters_2", "call_2"),
    ]
    assert calls[0].tool_args == {"datacenter": "Delhi", "page": 0}
    assert calls[0].tool_result == "no json"  # not JSON: kept as the string it was
    assert calls[1].tool_result == [{"name": "prod-1"}]
    assert (calls[2].success, calls[2].error) == (False, "permission denied")
    assert all(c.duration_ms is not None and c.duration_ms >= 0 for c in calls)
    # The spans are remembered, without content once applied.
    assert OtlpSpan.objects.count() == len(spans) and not OtlpSpan.objects.filter(payload__isnull=False).exists()

    # An exporter retrying everything (it never saw the answers) duplicates nothing.
    assert agent.export(spans) is SpanExportResult.SUCCESS
    assert AgentTrace.objects.count() == 1 and ToolCall.objects.count() == 3

    # The trace is an ordinary trace for the API, with its source.
    response = otlp_env_client(otlp_env).get("/api/v1/metrics/trace/conv-1")
    assert response.status_code == 200
    assert response.json()["source"] == "otlp" and len(response.json()["tool_calls"]) == 3


def otlp_env_client(live_server) -> httpx.Client:
    """A client with the agent's key (a read scope too), taken from its OTEL_EXPORTER_OTLP_HEADERS."""
    raw = os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split("%20", 1)[1]
    return httpx.Client(base_url=live_server.url, headers={"Authorization": f"Bearer {raw}"})


def test_failed_root_fails_the_trace_and_late_child_is_ordered_by_start(otlp_env):
    agent = Agent()
    with agent.tracer.start_as_current_span("agent") as root:
        root.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "content": "restart pod"}]))
        for name in ("early", "late"):
            with agent.tracer.start_as_current_span(f"execute_tool {name}") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", name)
        root.set_status(Status(StatusCode.ERROR, "agent crashed"))
    early, late, root_span = agent.spans()
    # The root and the later tool first; the tool that started earliest arrives after the trace is done.
    assert agent.export([late, root_span]) is SpanExportResult.SUCCESS
    trace = AgentTrace.objects.get()
    assert (trace.status, trace.success, trace.error) == ("failed", False, "agent crashed")
    assert trace.session_id == f"otel_{root_span.context.trace_id:032x}"  # no conversation id: the trace id
    assert trace.user_query == "restart pod" and trace.agent_name == "k8s-agent"  # service.name
    assert agent.export([early]) is SpanExportResult.SUCCESS
    trace.refresh_from_db()
    assert [c.tool_name for c in trace.tool_calls.order_by("seq")] == ["early", "late"]
    assert trace.tool_call_count == 2


def test_gzip_and_conversation_shared_by_two_traces(otlp_env):
    agent = Agent()
    run_agent(agent, failing_tool=False)
    run_agent(agent, failing_tool=False)
    assert agent.export(agent.spans(), compression=Compression.Gzip) is SpanExportResult.SUCCESS
    traces = list(AgentTrace.objects.order_by("session_id"))
    # session_id is unique: the first trace of the conversation takes its id, the next one a suffix.
    assert traces[0].session_id == "conv-1"
    assert traces[1].session_id == f"conv-1-{traces[1].otel_trace_id}"
    assert {t.metadata["otel"]["conversation_id"] for t in traces} == {"conv-1"}


@pytest.fixture
def key_client(client, db):
    _key, raw = api_key_create(username="ingester", staff=False, scopes=["ingest"])
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


def _protobuf_body() -> bytes:
    agent = Agent()
    run_agent(agent, tools=1)
    return encode_spans(agent.spans()).SerializeToString()


def _json_body(trace_id="5b8efff798038103d269b633813fc60c") -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-agent"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "manual"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "name": "execute_tool search",
                                "kind": 1,
                                "startTimeUnixNano": "1544712660300000000",
                                "endTimeUnixNano": "1544712660400000000",
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                    {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
                                    {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": '{"q": "pods"}'}},
                                ],
                                "status": {"code": 2, "message": "timeout"},
                            },
                            {
                                "traceId": trace_id,
                                "spanId": "eee19b7ec3c1b173",
                                "name": "invoke_agent",
                                "kind": "SPAN_KIND_INTERNAL",
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                                    {"key": "session.id", "value": {"stringValue": "json-session"}},
                                    {
                                        "key": "gen_ai.input.messages",
                                        "value": {
                                            "stringValue": json.dumps([{"role": "user", "content": "find pods"}])
                                        },
                                    },
                                    {"key": "retries", "value": {"intValue": "3"}},
                                ],
                            },
                        ],
                    }
                ],
            }
        ]
    }


def test_json_encoding_by_hand(key_client):
    response = key_client.post("/v1/traces", json.dumps(_json_body()), content_type="application/json")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json" and response.json() == {}
    trace = AgentTrace.objects.get()
    assert (trace.session_id, trace.agent_name, trace.user_query) == ("json-session", "json-agent", "find pods")
    call = trace.tool_calls.get()
    assert (call.tool_name, call.tool_args, call.success, call.error, call.duration_ms) == (
        "search",
        {"q": "pods"},
        False,
        "timeout",
        100.0,
    )
    assert trace.metadata["otel"]["spans"][0]["attributes"] == {"retries": 3}


def test_json_gzip_and_partial_success(key_client):
    body = _json_body()
    bad = dict(body["resourceSpans"][0]["scopeSpans"][0]["spans"][0], spanId="0000000000000000")
    body["resourceSpans"][0]["scopeSpans"][0]["spans"].append(bad)
    response = key_client.post(
        "/v1/traces",
        gzip.compress(json.dumps(body).encode()),
        content_type="application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "span_id" in partial["errorMessage"]
    assert AgentTrace.objects.get().tool_calls.count() == 1


def test_protobuf_partial_success_answer_is_protobuf(key_client):
    agent = Agent()
    run_agent(agent, tools=1)
    request = encode_spans(agent.spans())
    request.resource_spans[0].scope_spans[0].spans[0].trace_id = b"\x00" * 16
    response = key_client.post("/v1/traces", request.SerializeToString(), content_type=PROTOBUF)
    assert response.status_code == 200 and response["Content-Type"] == PROTOBUF
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1


def _status(response) -> status_pb2.Status:
    assert response["Content-Type"] == PROTOBUF
    return status_pb2.Status.FromString(response.content)


@pytest.mark.parametrize("body", [b"\xff\xff\xff garbage", b"\x0a\x05\x0a"])
def test_undecodable_protobuf_is_400_with_a_status(key_client, body):
    response = key_client.post("/v1/traces", body, content_type=PROTOBUF)
    assert response.status_code == 400
    assert "protobuf" in _status(response).message


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[1, 2]",
        b'{"resourceSpans": 5}',
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
    ],
)
def test_undecodable_json_is_400(key_client, body):
    response = key_client.post("/v1/traces", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == 3 and response.json()["message"]


def test_bad_gzip_is_400(key_client):
    response = key_client.post("/v1/traces", b"not gzip", content_type=PROTOBUF, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 400


def test_unsupported_content_type_and_encoding_are_415(key_client):
    assert key_client.post("/v1/traces", b"x", content_type="text/plain").status_code == 415
    response = key_client.post("/v1/traces", _protobuf_body(), content_type=PROTOBUF, HTTP_CONTENT_ENCODING="br")
    assert response.status_code == 415


def test_too_large_is_413(key_client, settings):
    settings.EVALSITE_MAX_BODY_BYTES = 1000
    response = key_client.post("/v1/traces", b"x" * 2000, content_type=PROTOBUF)
    assert response.status_code == 413


def test_gzip_bomb_is_413_without_inflating_it(key_client, settings):
    settings.EVALSITE_OTLP_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    bomb = gzip.compress(b"\0" * (200 * 1024 * 1024))  # 200 MB of zeros in about 200 KB
    assert len(bomb) < 300_000
    response = key_client.post("/v1/traces", bomb, content_type=PROTOBUF, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413
    assert "Decompressed" in _status(response).message


def test_no_key_or_wrong_key_is_401(client, db):
    response = client.post("/v1/traces", _protobuf_body(), content_type=PROTOBUF)
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"
    assert _status(response).code == 16
    response = client.post("/v1/traces", _protobuf_body(), content_type=PROTOBUF, HTTP_AUTHORIZATION="Bearer nope")
    assert response.status_code == 401


def test_key_without_ingest_scope_is_403(client, db):
    _key, raw = api_key_create(username="reader", staff=False, scopes=["read"])
    response = client.post("/v1/traces", _protobuf_body(), content_type=PROTOBUF, HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 403 and "ingest" in _status(response).message


def test_overload_is_429_with_retry_after(key_client, settings):
    settings.EVALSITE_OTLP_MAX_IN_FLIGHT = 0
    response = key_client.post("/v1/traces", _protobuf_body(), content_type=PROTOBUF)
    assert response.status_code == 429 and response["Retry-After"] == str(settings.EVALSITE_OTLP_RETRY_AFTER_SECONDS)


def test_database_unavailable_is_503_with_retry_after(key_client, monkeypatch):
    def unavailable(**kwargs):
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(otlp_services, "otlp_spans_ingest", unavailable)
    response = key_client.post("/v1/traces", _protobuf_body(), content_type=PROTOBUF)
    assert response.status_code == 503 and response["Retry-After"]
    assert _status(response).code == 14


def test_nul_characters_reject_the_spans_holding_them(key_client):
    """As REST answers 422 for a NUL, OTLP rejects each span that would store one (issue 21)."""
    body = _json_body()
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"][2]["value"]["stringValue"] = json.dumps(
        [{"role": "user", "content": "find\u0000 pods"}]
    )
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][2]["value"]["stringValue"] = (
        '{"q": "a\\u0000b"}'
    )
    response = key_client.post("/v1/traces", json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2" and "2 nul_character" in partial["errorMessage"]
    assert not AgentTrace.objects.exists() and not OtlpSpan.objects.exists()


def test_trace_page_and_admin_show_what_was_not_mapped(key_client, admin_client):
    assert key_client.post("/v1/traces", json.dumps(_json_body()), content_type="application/json").status_code == 200
    page = admin_client.get("/console/traces/json-session/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "OpenTelemetry" in html and "5b8efff798038103d269b633813fc60c" in html
    assert "retries" in html  # the unmapped attribute, under its span
    trace = AgentTrace.objects.get()
    admin_page = admin_client.get(f"/admin/traces/agenttrace/{trace.pk}/change/")
    assert admin_page.status_code == 200 and "OTLP" in admin_page.content.decode()
    assert "OTLP" in admin_client.get("/admin/traces/agenttrace/?source=otlp").content.decode()


def test_children_stored_while_their_trace_was_being_created_are_settled(key_client):
    """The race two concurrent exports can run: one stores children as waiting (it saw no trace),
    the other creates the trace without seeing them (not committed yet). The settling step after
    each commit picks them up."""
    body = _json_body()
    tool_span = body["resourceSpans"][0]["scopeSpans"][0]["spans"].pop(0)
    assert key_client.post("/v1/traces", json.dumps(body), content_type="application/json").status_code == 200
    trace = AgentTrace.objects.get()
    assert trace.tool_calls.count() == 0
    # What the other request committed: the child, waiting, as if no trace had existed.
    request = ExportTraceServiceRequest()
    json_format.ParseDict(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                dict(
                                    tool_span,
                                    traceId=base64.b64encode(bytes.fromhex(tool_span["traceId"])).decode(),
                                    spanId=base64.b64encode(bytes.fromhex(tool_span["spanId"])).decode(),
                                    parentSpanId=base64.b64encode(bytes.fromhex(tool_span["parentSpanId"])).decode(),
                                )
                            ]
                        }
                    ]
                }
            ]
        },
        request,
    )
    (record,), _, _ = export_records(request)
    OtlpSpan.objects.create(
        project_id=trace.project_id, otel_trace_id=record.trace_id, span_id=record.span_id, payload=record.to_payload()
    )
    assert otlp_services._settle({record.trace_id}, trace.project_id) == [trace.pk]
    assert trace.tool_calls.get().tool_name == "search"
    assert not OtlpSpan.objects.filter(payload__isnull=False).exists()
    assert otlp_services._settle({record.trace_id}, trace.project_id) == []  # claimed once


def test_nul_in_attribute_keys_rejects_the_span_that_keeps_them(key_client):
    body = _json_body()
    body["resourceSpans"][0]["resource"]["attributes"].append({"key": "host\u0000name", "value": {"stringValue": "x"}})
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"].append(
        {"key": "odd\u0000key", "value": {"kvlistValue": {"values": [{"key": "a\u0000", "value": {"intValue": "1"}}]}}}
    )
    response = key_client.post("/v1/traces", json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "nul_character" in partial["errorMessage"]
    # The root (which keeps the resource and its attributes) is rejected; its child waits for a good one.
    assert not AgentTrace.objects.exists() and OtlpSpan.objects.filter(payload__isnull=False).count() == 1


def test_exporter_retries_after_503_and_the_spans_land_once(otlp_env, monkeypatch, settings):
    """What Retry-After is for: the real exporter waits, sends the batch again, and it is stored."""
    settings.EVALSITE_OTLP_RETRY_AFTER_SECONDS = 1
    real_ingest = otlp_services.otlp_spans_ingest
    calls = []

    def unavailable_once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("the database is restarting")
        return real_ingest(**kwargs)

    monkeypatch.setattr(otlp_services, "otlp_spans_ingest", unavailable_once)
    agent = Agent()
    run_agent(agent, tools=2)
    assert agent.export(agent.spans()) is SpanExportResult.SUCCESS
    assert len(calls) == 2
    assert AgentTrace.objects.get().tool_calls.count() == 2


def test_root_and_children_sent_at_the_same_moment_make_whole_traces(on_postgres, otlp_env):
    """Two exporters racing: one sends a trace's children while the other sends its root. Whichever
    commits last must pick up the other's spans (no lock is held across requests)."""
    agent = Agent()
    for _ in range(12):
        run_agent(agent, conversation=None, failing_tool=False, tools=4)
    spans = agent.spans()
    by_trace: dict[int, list] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    key = os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split("%20", 1)[1]
    barrier = threading.Barrier(2)
    failures = []

    def send(part):
        with httpx.Client(
            base_url=otlp_env.url, headers={"Authorization": f"Bearer {key}", "Content-Type": PROTOBUF}
        ) as client:
            for trace_spans in by_trace.values():
                chosen = [s for s in trace_spans if (s.parent is None) == (part == "root")]
                barrier.wait(timeout=30)
                response = client.post("/v1/traces", content=encode_spans(chosen).SerializeToString())
                if response.status_code != 200:
                    failures.append(response.status_code)

    threads = [threading.Thread(target=send, args=(part,)) for part in ("children", "root")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    assert AgentTrace.objects.count() == 12
    assert all(t.tool_calls.count() == 4 for t in AgentTrace.objects.all())
    assert all(
        [c.tool_name for c in t.tool_calls.order_by("seq")] == [f"list_clusters_{i}" for i in range(4)]
        for t in AgentTrace.objects.all()
    )
    assert not OtlpSpan.objects.filter(payload__isnull=False).exists()


def test_old_span_ids_are_pruned(db, settings):
    settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS = 1
    old = timezone.now() - timedelta(hours=2)
    OtlpSpan.objects.create(otel_trace_id="a" * 32, span_id="b" * 16, received_at=old, payload={"waiting": True})
    OtlpSpan.objects.create(otel_trace_id="a" * 32, span_id="c" * 16)
    assert prune_otlp_spans() == 1
    assert list(OtlpSpan.objects.values_list("span_id", flat=True)) == ["c" * 16]
