"""Readers of a stored trace survive any JSON value already stored (rows written before the storage
checks may hold ints past 64 bits, which jsonb keeps and hands back as Python ints, or deep
nesting): GET /trace, the admin's trace and evaluation pages, the console's trace page."""

import json

import pytest

from apps.agentic.models import AgentEvaluation
from apps.traces.models import AgentTrace, ToolCall
from tests.agentic.factories import AgentEvaluationFactory
from tests.stored_json import STORED
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(params=STORED.values(), ids=STORED.keys())
def stored(request):
    """A trace whose tool call, metadata and evaluation hold the value, written past the doors'
    checks (the ORM encodes with the stdlib, which takes any value), as an older row would be."""
    value = request.param
    trace = AgentTraceFactory(session_id="stored-bad", tool_calls=[{"tool_name": "list_k8s_clusters"}])
    ToolCall.objects.filter(trace=trace).update(tool_args=value, tool_result=value)
    AgentTrace.objects.filter(pk=trace.pk).update(metadata={"deep": value})
    evaluation = AgentEvaluationFactory(trace=trace)
    AgentEvaluation.objects.filter(pk=evaluation.pk).update(
        judge_fingerprint={"judge": "x", "odd": value}, manual_input={"tool_calls": [{"tool_args": value}]}
    )
    assert ToolCall.objects.get(trace=trace).tool_args == value
    return trace, evaluation, value


def test_get_trace_answers_the_stored_value(api, stored):
    trace, _, value = stored
    response = api.get(f"/api/v1/metrics/trace/{trace.session_id}")
    assert response.status_code == 200, response.content
    body = json.loads(response.content)  # the stdlib reads big ints back exactly
    assert body["tool_calls"][0]["tool_args"] == value and body["metadata"] == {"deep": value}


def test_admin_pages(admin_client, stored):
    trace, evaluation, _ = stored
    for url in (
        "/admin/traces/agenttrace/",
        f"/admin/traces/agenttrace/{trace.pk}/change/",
        "/admin/agentic/agentevaluation/",
        f"/admin/agentic/agentevaluation/{evaluation.pk}/change/",
    ):
        response = admin_client.get(url)
        assert response.status_code == 200, url
    page = admin_client.get(f"/admin/traces/agenttrace/{trace.pk}/change/").content.decode()
    assert "leaf" in page or "100000000000000000000" in page


def test_console_trace_page(admin_client, stored):
    trace, _, _ = stored
    response = admin_client.get(f"/console/traces/{trace.session_id}/")
    assert response.status_code == 200
    assert "list_k8s_clusters" in response.content.decode()
    assert admin_client.get("/console/traces/").status_code == 200


@pytest.fixture
def ingest_client(client, db):
    from apps.core.services import api_key_create

    _key, raw = api_key_create(username="ingester", staff=False, scopes=["ingest"])
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


@pytest.mark.parametrize("value", [STORED["big int"], STORED["100 deep"]], ids=["big int", "100 deep"])
def test_a_waiting_child_stored_before_the_checks_is_assembled_with_its_root(ingest_client, value):
    """A tool span that waited for its root since before the storage checks (OTLP read
    '{"n": 1e20}' as a float, jsonb keeps 100000000000000000000, it comes back an int): the root's
    export reads that payload and writes the tool call. It answers 200 with the call attached."""
    from apps.traces.models import OtlpSpan
    from tests.traces.test_otlp import _json_body

    body = _json_body()
    spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = spans.pop(1)
    assert ingest_client.post("/v1/traces", json.dumps(body), content_type="application/json").status_code == 200
    waiting = OtlpSpan.objects.get(payload__isnull=False)
    OtlpSpan.objects.filter(pk=waiting.pk).update(payload={**waiting.payload, "tool_args": value})
    spans[:] = [root]
    response = ingest_client.post("/v1/traces", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    call = AgentTrace.objects.get(session_id="json-session").tool_calls.get()
    assert call.tool_args == value
