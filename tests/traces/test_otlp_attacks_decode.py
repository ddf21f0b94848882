"""Attacks on the OTLP receiver's decoding and mapping (issue 21): bodies that cost far more to decode
than to send, nesting that overflows recursion, and span content the database cannot store.

Storage checks run on PostgreSQL (`on_postgres`): the 500s they prevent came from jsonb and from
readers of what was stored."""

import gzip
import json
import os
import zlib

import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

from apps.core.services import api_key_create
from apps.traces.ingestion.otlp import decode, mapping
from apps.traces.ingestion.otlp import services as otlp_services
from apps.traces.ingestion.otlp.mapping import ExportTooLarge, export_records
from apps.traces.models import AgentTrace, OtlpSpan

PROTOBUF = "application/x-protobuf"
EMPTY_GZIP_MEMBER = gzip.compress(b"", mtime=0)


@pytest.fixture
def key_client(client, db):
    _key, raw = api_key_create(username="ingester", staff=False, scopes=["ingest", "read", "evaluate"])
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


@pytest.fixture
def ingest_calls(monkeypatch):
    """The keyword arguments of every otlp_spans_ingest call (the real one still runs)."""
    calls = []
    real = otlp_services.otlp_spans_ingest

    def spy(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(otlp_services, "otlp_spans_ingest", spy)
    return calls


def _status(response) -> status_pb2.Status:
    assert response["Content-Type"] == PROTOBUF
    return status_pb2.Status.FromString(response.content)


def _attr(key, value) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _trace(trace_id: str, *, session: str, tools: list[dict]) -> list[dict]:
    """OTLP JSON spans of one trace: an agent root and one execute_tool child per `tools` entry
    (attributes of the tool span)."""
    root_id = trace_id[:16]
    messages_in = json.dumps([{"role": "user", "content": "list pods"}])
    messages_out = json.dumps([{"role": "assistant", "content": "3 pods"}])
    spans = [
        {
            "traceId": trace_id,
            "spanId": root_id,
            "name": "invoke_agent",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [
                _attr("gen_ai.operation.name", "invoke_agent"),
                _attr("session.id", session),
                _attr("gen_ai.agent.name", "K8sAgent"),
                _attr("gen_ai.input.messages", messages_in),
                _attr("gen_ai.output.messages", messages_out),
            ],
        }
    ]
    for i, extra in enumerate(tools, start=1):
        attributes = [
            _attr("gen_ai.operation.name", "execute_tool"),
            _attr("gen_ai.tool.name", f"tool_{i}"),
            _attr("gen_ai.tool.call.arguments", json.dumps({"page": i})),
        ]
        attributes = [a for a in attributes if a["key"] not in extra] + [
            _attr(key, value) for key, value in extra.items()
        ]
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{root_id[:14]}{i:02x}",
                "parentSpanId": root_id,
                "name": f"execute_tool tool_{i}",
                "startTimeUnixNano": str(1700000000000000000 + i * 1000),
                "endTimeUnixNano": str(1700000000000000000 + i * 1000 + 500),
                "attributes": attributes,
            }
        )
    return spans


def _body(*spans_lists) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "attack")]},
                "scopeSpans": [{"spans": [s for spans in spans_lists for s in spans]}],
            }
        ]
    }


def _as_protobuf(body: dict) -> bytes:
    return decode.parse_request(json.dumps(body).encode(), decode.JSON).SerializeToString()


# --- 1. bounded decoding -------------------------------------------------------------------------


@pytest.mark.parametrize("members", [65, 485_000], ids=["just-over-the-limit", "9.7MB"])
def test_a_body_of_many_empty_gzip_members_is_refused(key_client, members):
    """The audit's 9.7 MB body of 20-byte empty gzip members took 77 s of CPU and was answered 200:
    each member copied the rest of the body. It is now refused after EVALSITE_OTLP_MAX_GZIP_MEMBERS."""
    body = EMPTY_GZIP_MEMBER * members
    response = key_client.post("/v1/traces", body, content_type=PROTOBUF, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 400
    assert "members" in _status(response).message


def test_concatenated_members_within_the_limit_are_one_body(key_client, settings):
    """RFC 1952: members are one body. Split mid-message and across the inflater's input chunks,
    the export is read whole."""
    raw = _as_protobuf(_body(_trace("ab" * 16, session="split", tools=[{}, {}])))
    cut = len(raw) // 2
    body = gzip.compress(raw[:cut]) + EMPTY_GZIP_MEMBER * 10 + gzip.compress(raw[cut:])
    response = key_client.post("/v1/traces", body, content_type=PROTOBUF, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200
    assert AgentTrace.objects.get(session_id="split").tool_calls.count() == 2


def test_inflating_across_chunk_boundaries_gives_the_exact_body():
    chunks = [os.urandom(100_000), b"x" * 300_000, os.urandom(70_000), b""]
    body = b"".join(gzip.compress(c) for c in chunks)
    assert decode.decompress(body, "gzip", limit=10**7, max_members=4) == b"".join(chunks)
    zlib_body = zlib.compress(chunks[0]) + zlib.compress(chunks[1])
    assert decode.decompress(zlib_body, "deflate", limit=10**7, max_members=4) == chunks[0] + chunks[1]
    with pytest.raises(decode.BodyError) as refused:
        decode.decompress(body, "gzip", limit=10**7, max_members=3)
    assert refused.value.status == 400
    with pytest.raises(decode.BodyError) as truncated:
        decode.decompress(body[:-5], "gzip", limit=10**7, max_members=4)
    assert truncated.value.status == 400 and "truncated" in truncated.value.message
    with pytest.raises(decode.BodyError) as too_big:
        decode.decompress(body, "gzip", limit=400_000, max_members=4)
    assert too_big.value.status == 413


# --- 2. bounded attributes -----------------------------------------------------------------------


def _span_with_attributes(n: int) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    span = (
        request.resource_spans.add()
        .scope_spans.add()
        .spans.add(
            trace_id=bytes.fromhex("cd" * 16),
            span_id=bytes.fromhex("cd" * 8),
            name="invoke_agent",
            start_time_unix_nano=1700000000000000000,
            end_time_unix_nano=1700000001000000000,
        )
    )
    span.attributes.extend(KeyValue(key=f"k{i}", value=AnyValue(int_value=i)) for i in range(n))
    return request


def test_attributes_past_the_per_span_limit_are_dropped_and_counted(key_client, settings):
    """OpenTelemetry's attribute count limit (128 in the SDKs): the first ones are kept, the rest
    dropped and counted, so a span of 300,000 attributes costs what a span of 128 does."""
    request = _span_with_attributes(300_000)
    (record,), rejections, _ = export_records(request, max_attributes_per_span=128)
    assert record.attributes["_dropped_attributes"] == 300_000 - 128 and not rejections.by_reason
    response = key_client.post("/v1/traces", request.SerializeToString(), content_type=PROTOBUF)
    assert response.status_code == 200
    otel = AgentTrace.objects.get().metadata["otel"]
    assert otel["spans"][0]["attributes"]["_dropped_attributes"] == 300_000 - 128


def test_an_export_with_too_many_attribute_values_is_413_before_mapping(key_client, settings):
    settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST = 1000
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for s in range(10):
        span = scope.spans.add(trace_id=bytes([s + 1]) * 16, span_id=bytes([s + 1]) * 8, name="x")
        span.attributes.extend(KeyValue(key=f"k{i}", value=AnyValue(int_value=i)) for i in range(128))
    response = key_client.post("/v1/traces", request.SerializeToString(), content_type=PROTOBUF)
    assert response.status_code == 413 and "attribute values" in _status(response).message
    assert not OtlpSpan.objects.exists()


def test_one_attribute_holding_a_huge_array_counts_its_items(key_client, settings):
    settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST = 10_000
    request = _span_with_attributes(1)
    request.resource_spans[0].scope_spans[0].spans[0].attributes.add(
        key="huge", value=AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1)] * 20_000))
    )
    with pytest.raises(ExportTooLarge):
        export_records(request, max_attributes=10_000)
    response = key_client.post("/v1/traces", request.SerializeToString(), content_type=PROTOBUF)
    assert response.status_code == 413


def test_json_text_that_would_decode_into_millions_of_values_rejects_its_span(key_client):
    """A few kilobytes of gzip carry megabytes of `[{},{},…]`: decoded, ~70 bytes a value. The span
    is rejected before decoding; its siblings are stored."""
    huge = "[" + "{}," * (mapping.MAX_JSON_VALUES_PER_REQUEST + 1) + "{}]"
    body = _body(_trace("da" * 16, session="json-bomb", tools=[{"gen_ai.tool.call.result": huge}, {}]))
    compressed = gzip.compress(_as_protobuf(body))
    assert len(compressed) < 100_000
    response = key_client.post("/v1/traces", compressed, content_type=PROTOBUF, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 1 and "too_large" in partial.error_message
    assert AgentTrace.objects.get(session_id="json-bomb").tool_calls.count() == 1
    # As OTLP JSON the braces of that text count as objects: the body is refused whole, unparsed.
    response = key_client.post(
        "/v1/traces",
        gzip.compress(json.dumps(body).encode()),
        content_type="application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 413


def test_otlp_json_with_too_many_objects_is_413_before_parsing(key_client, settings):
    """protobuf's JSON parser costs ~5 µs an object in Python: 64 MB of small attributes took seconds."""
    settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST = 1000
    spans = _trace("ac" * 16, session="json-objects", tools=[])
    spans[0]["attributes"] += [{"key": f"k{i}", "value": {"intValue": str(i)}} for i in range(600)]
    response = key_client.post("/v1/traces", json.dumps(_body(spans)), content_type="application/json")
    assert response.status_code == 413 and "objects" in response.json()["message"]


def test_an_export_with_too_many_spans_is_413(key_client, settings):
    settings.EVALSITE_OTLP_MAX_SPANS_PER_REQUEST = 5
    spans = _trace("ef" * 16, session="many", tools=[{}] * 5)
    response = key_client.post("/v1/traces", json.dumps(_body(spans)), content_type="application/json")
    assert response.status_code == 413 and "spans" in response.json()["message"]


# --- 3. nesting ------------------------------------------------------------------------------------


def test_json_nested_a_thousand_arrays_deep_is_400(key_client):
    """A RecursionError (500) before; the specification asks 400 for a body that cannot be decoded."""
    body = '{"resourceSpans": ' + "[" * 1000 + "]" * 1000 + "}"
    response = key_client.post("/v1/traces", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == 3
    assert "nested" in response.json()["message"]


def test_json_attribute_values_nested_deep_are_400_not_a_crash(key_client):
    spans = _trace("fa" * 16, session="deep-attr", tools=[])
    spans[0]["attributes"].append({"key": "deep", "value": "DEEP"})
    deep = '{"arrayValue": {"values": [' * 400 + '{"stringValue": "leaf"}' + "]}}" * 400
    body = json.dumps(_body(spans)).replace('"DEEP"', deep)
    response = key_client.post("/v1/traces", body, content_type="application/json")
    assert response.status_code == 400


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, by hand: the SDK's messages refuse to nest this deep."""
    length, size = bytearray(), len(payload)
    while True:
        length.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            break
    return bytes([number << 3 | 2]) + bytes(length) + payload


def test_lone_surrogates_in_otlp_json_are_still_refused_and_pairs_accepted():
    """decode speeds up protobuf's check for unpaired surrogates (1.7 s for a 60 MB attribute);
    the answers must stay the same."""
    span = {"traceId": "ab" * 16, "spanId": "ab" * 8, "name": "n\ud800x"}
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}, ExportTraceServiceRequest())
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [dict(span, name="é\U0001f600")]}]}]})
    assert "\\ud83d\\ude00" in body  # an escaped pair, one character once decoded
    request = decode.parse_request(body.encode(), decode.JSON)
    assert request.resource_spans[0].scope_spans[0].spans[0].name == "é\U0001f600"


def test_protobuf_attribute_values_nested_deep_are_400_not_a_crash(key_client):
    value = AnyValue(string_value="leaf").SerializeToString()
    for _ in range(200):
        value = _field(5, _field(1, value))  # AnyValue.array_value, ArrayValue.values
    span = _span_with_attributes(0).resource_spans[0].scope_spans[0].spans[0].SerializeToString()
    span += _field(9, _field(1, b"deep") + _field(2, value))  # Span.attributes: KeyValue(key, value)
    body = _field(1, _field(2, _field(2, span)))  # resource_spans, scope_spans, spans
    response = key_client.post("/v1/traces", body, content_type=PROTOBUF)
    assert response.status_code == 400 and "protobuf" in _status(response).message


# --- 4. the storage checks REST applies ----------------------------------------------------------


def test_tool_arguments_past_64_bits_reject_that_span_and_the_trace_still_evaluates(
    on_postgres, key_client, ingest_calls
):
    """`{"n": 1e20}` was stored, then /evaluate/session answered 500 (Integer exceeds 64-bit range in
    the fingerprint). The span is rejected with its reason; its trace and sibling are stored."""
    trace_id = "1e20" * 8
    body = _body(_trace(trace_id, session="big-number", tools=[{"gen_ai.tool.call.arguments": '{"n": 1e20}'}, {}]))
    response = key_client.post("/v1/traces", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "integer_out_of_range" in partial["errorMessage"] and "64-bit" in partial["errorMessage"]
    trace = AgentTrace.objects.get(session_id="big-number")
    assert list(trace.tool_calls.values_list("tool_name", flat=True)) == ["tool_2"]
    assert ingest_calls[0]["rejected"] == {"integer_out_of_range": 1}
    evaluated = key_client.post(
        "/api/v1/metrics/evaluate/session", {"session_id": "big-number"}, content_type="application/json"
    )
    assert evaluated.status_code == 200, evaluated.content


def _deep_json(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_deep_tool_arguments_reject_that_span_not_the_innocent_trace(on_postgres, key_client, ingest_calls, encoding):
    """Arguments nested 300 levels deep answered 500 and rolled back an innocent trace sent with them."""
    bad = _trace("de" * 16, session="deep-args", tools=[{"gen_ai.tool.call.arguments": _deep_json(300)}])
    innocent = _trace("be" * 16, session="innocent", tools=[{}, {}])
    body = _body(bad, innocent)
    if encoding == "json":
        response = key_client.post("/v1/traces", json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content
        rejected, message = (
            int(response.json()["partialSuccess"]["rejectedSpans"]),
            response.json()["partialSuccess"]["errorMessage"],
        )
    else:
        response = key_client.post("/v1/traces", _as_protobuf(body), content_type=PROTOBUF)
        assert response.status_code == 200 and response["Content-Type"] == PROTOBUF
        answer = ExportTraceServiceResponse.FromString(response.content).partial_success
        rejected, message = answer.rejected_spans, answer.error_message
    assert rejected == 1 and "too_deep" in message and "nested more than 64" in message
    assert AgentTrace.objects.get(session_id="innocent").tool_calls.count() == 2
    assert AgentTrace.objects.get(session_id="deep-args").tool_calls.count() == 0
    assert ingest_calls[0]["rejected"] == {"too_deep": 1}
    # The rejected span is not stored, so a retry of the export is refused the same way.
    assert OtlpSpan.objects.count() == 4


def test_nul_anywhere_a_span_stores_rejects_that_span(on_postgres, key_client, ingest_calls):
    """REST answers 422 for a NUL; OTLP rejects the span that holds one, naming the reason."""
    spans = _trace(
        "00ab" * 8,
        session="nul",
        tools=[
            {"gen_ai.tool.call.arguments": '{"q": "a\\u0000b"}'},  # escaped inside the JSON text
            {"deployment.note": "x\u0000y"},  # an unmapped attribute, kept in the trace's metadata
            {"gen_ai.tool.name": "ok"},
        ],
    )
    response = key_client.post("/v1/traces", json.dumps(_body(spans)), content_type="application/json")
    assert response.status_code == 200, response.content
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2" and "nul_character" in partial["errorMessage"]
    trace = AgentTrace.objects.get(session_id="nul")
    assert list(trace.tool_calls.values_list("tool_name", flat=True)) == ["ok"]
    assert ingest_calls[0]["rejected"] == {"nul_character": 2}


def test_nul_in_the_root_span_rejects_it_and_its_children_wait(on_postgres, key_client):
    spans = _trace("0abc" * 8, session="nul-root", tools=[{}])
    spans[0]["attributes"].append(_attr("gen_ai.agent.name", "K8s\u0000Agent"))
    response = key_client.post("/v1/traces", json.dumps(_body(spans)), content_type="application/json")
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert not AgentTrace.objects.exists()
    assert OtlpSpan.objects.filter(payload__isnull=False).count() == 1  # the child waits for a good root


def test_rejections_are_counted_by_reason():
    body = _body(
        _trace(
            "ca" * 16,
            session="reasons",
            tools=[
                {"gen_ai.tool.call.arguments": '{"n": 1e20}'},
                {"gen_ai.tool.call.arguments": '{"n": -1e30}'},
                {"gen_ai.tool.call.result": _deep_json(100)},
                {"x": "\u0000"},
                {},
            ],
        )
    )
    body["resourceSpans"][0]["scopeSpans"][0]["spans"].append(
        {"traceId": "ca" * 16, "spanId": "0000000000000000", "name": "bad id"}
    )
    records, rejections, message = export_records(decode.parse_request(json.dumps(body).encode(), decode.JSON))
    assert len(records) == 2
    assert rejections.by_reason == {"integer_out_of_range": 2, "too_deep": 1, "nul_character": 1, "invalid": 1}
    assert message.startswith("5 span(s) rejected (2 integer_out_of_range, 1 invalid, 1 nul_character, 1 too_deep)")
