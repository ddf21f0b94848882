"""Redaction through the real doors: REST lifecycle and batch, OTLP, and TRACE, with a project's
redaction on. The proof is the database: every row of every table, serialized, holds none of the
sensitive values, while the placeholders and the rest of the text are there. Off by default."""

import json

import pytest
from django.apps import apps as django_apps
from django.core import serializers
from django.test import Client

from apps.core.models import ProjectRole
from apps.rag.models import TraceEvaluation
from apps.traces.models import AgentTrace, RedactionCount
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory, project_key_client

BASE = "/api/v1/metrics"
EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
IP = "203.0.113.7"
SECRET = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789"
CUSTOM = "ACME-123456"
SENSITIVE = (EMAIL, PHONE, CARD, IBAN, IP, SECRET, CUSTOM, "4111111111111111", "DE89370400440532013000")
ALL_DETECTORS = ["email", "phone", "credit_card", "iban", "ip_address", "secret"]


@pytest.fixture
def pii_project(db):
    return ProjectFactory(
        slug="pii",
        name="PII",
        redaction={"enabled": True, "detectors": ALL_DETECTORS, "custom_patterns": [r"ACME-\d{6}"]},
    )


@pytest.fixture
def client(pii_project):
    return project_key_client(pii_project)


def database_text() -> str:
    """Every row of every model, as JSON: what a person with the database would read."""
    dumps = []
    for model in django_apps.get_models():
        if model._meta.managed and not model._meta.proxy:
            dumps.append(serializers.serialize("json", model.objects.all()))
    return "\n".join(dumps)


def assert_nothing_sensitive_stored():
    stored = database_text()
    leaked = [value for value in SENSITIVE if value in stored]
    assert leaked == [], f"stored in clear: {leaked}"


def counts_of(project) -> dict:
    row = RedactionCount.objects.get(project=project)
    return {
        k: getattr(row, k)
        for k in ("email", "phone", "credit_card", "iban", "ip_address", "secret", "custom")
        if getattr(row, k)
    }


def test_rest_lifecycle_stores_placeholders_and_a_retry_stays_idempotent(client, pii_project):
    start = {
        "session_id": "s-1",
        "user_query": f"I am {EMAIL}, call {PHONE}",
        "agent_name": "Agent0",
        "metadata": {"client": {"ip": IP}},
    }
    assert client.post(f"{BASE}/traces", start, format="json").status_code == 201
    # The same start again: compared redacted with redacted, so it is the no-op it was, not a 409.
    assert client.post(f"{BASE}/traces", start, format="json").status_code == 200
    intent = {"intent": f"refund order {CUSTOM}", "resource_type": "order", "operation": "refund"}
    assert client.post(f"{BASE}/traces/s-1/intent", intent, format="json").status_code == 200
    calls = [
        {"tool_name": "charge", "tool_args": {"card": CARD, "amount": 12}, "tool_result": {"iban": IBAN}},
        {"tool_name": "notify", "tool_args": {"to": EMAIL}, "tool_result": None, "success": False, "error": SECRET},
    ]
    assert client.post(f"{BASE}/traces/s-1/tool-calls", calls, format="json").status_code == 201
    complete = {"final_response": f"Refunded to {IBAN}; receipt sent to {EMAIL}.", "success": True}
    assert client.post(f"{BASE}/traces/s-1/complete", complete, format="json").status_code == 200

    trace = AgentTrace.objects.get(session_id="s-1")
    assert trace.user_query == "I am <EMAIL>, call <PHONE>"
    assert trace.metadata == {"client": {"ip": "<IP_ADDRESS>"}}
    assert trace.intent_detected == "refund order <CUSTOM>"
    assert trace.final_response == "Refunded to <IBAN>; receipt sent to <EMAIL>."
    first, second = trace.tool_calls.order_by("seq")
    assert (first.tool_args, first.tool_result) == ({"card": "<CREDIT_CARD>", "amount": 12}, {"iban": "<IBAN>"})
    assert (second.tool_args, second.error) == ({"to": "<EMAIL>"}, "<SECRET>")
    # What the client reads back is what was stored.
    read = client.get(f"{BASE}/trace/s-1").json()
    assert read["user_query"] == "I am <EMAIL>, call <PHONE>"
    assert_nothing_sensitive_stored()
    # The retried start counted again (it was received and redacted again); one row for the day.
    assert counts_of(pii_project) == {
        "email": 4,
        "phone": 2,
        "ip_address": 2,
        "custom": 1,
        "credit_card": 1,
        "iban": 2,
        "secret": 1,
    }


def batch_trace(session_id: str) -> dict:
    return {
        "session_id": session_id,
        "user_query": f"My card {CARD} was charged twice, I'm {EMAIL}",
        "agent_name": "Agent1",
        "intent_detected": "billing_dispute",
        "tool_calls": [
            {"tool_name": "lookup", "tool_args": {"card": 4111111111111111}, "tool_result": [{"from": IP}]},
        ],
        "final_response": f"Refund sent to {IBAN}. Key {SECRET} rotated.",
        "success": True,
        "metadata": {"phone": PHONE, "ticket": CUSTOM},
    }


def test_batch_stores_placeholders_and_a_retried_batch_is_unchanged(client, pii_project):
    body = {"traces": [batch_trace("b-1"), batch_trace("b-2")]}
    answer = client.post(f"{BASE}/traces/batch", body, format="json").json()
    assert answer["accepted_count"] == 2, answer
    again = client.post(f"{BASE}/traces/batch", body, format="json").json()
    assert [item.get("status") for item in again["accepted"]] == ["unchanged", "unchanged"], again

    trace = AgentTrace.objects.get(session_id="b-1")
    assert trace.user_query == "My card <CREDIT_CARD> was charged twice, I'm <EMAIL>"
    assert trace.final_response == "Refund sent to <IBAN>. Key <SECRET> rotated."
    assert trace.metadata == {"phone": "<PHONE>", "ticket": "<CUSTOM>"}
    call = trace.tool_calls.get()
    # A card sent as a JSON number becomes the placeholder string.
    assert (call.tool_args, call.tool_result) == ({"card": "<CREDIT_CARD>"}, [{"from": "<IP_ADDRESS>"}])
    assert_nothing_sensitive_stored()


def otlp_body() -> dict:
    def attr(key, value):
        return {"key": key, "value": {"stringValue": value}}

    trace_id = "5b8efff798038103d269b633813fc60c"
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "otel-agent"), attr("host.ip", IP)]},
                "scopeSpans": [
                    {
                        "scope": {"name": "manual"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "name": "execute_tool charge",
                                "kind": 1,
                                "startTimeUnixNano": "1544712660300000000",
                                "endTimeUnixNano": "1544712660400000000",
                                "attributes": [
                                    attr("gen_ai.operation.name", "execute_tool"),
                                    attr("gen_ai.tool.name", "charge"),
                                    attr("gen_ai.tool.call.arguments", json.dumps({"card": CARD, "iban": IBAN})),
                                    attr("gen_ai.tool.call.result", json.dumps({"receipt_to": EMAIL})),
                                ],
                                "status": {"code": 2, "message": f"gateway said {SECRET} is revoked"},
                            },
                            {
                                "traceId": trace_id,
                                "spanId": "eee19b7ec3c1b173",
                                "name": "invoke_agent",
                                "kind": "SPAN_KIND_INTERNAL",
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "attributes": [
                                    attr("gen_ai.operation.name", "invoke_agent"),
                                    attr("session.id", "otel-session"),
                                    attr(
                                        "gen_ai.input.messages",
                                        json.dumps([{"role": "user", "content": f"charge me, I'm {EMAIL}"}]),
                                    ),
                                    attr("user.phone", PHONE),
                                    attr("order.ref", CUSTOM),
                                ],
                            },
                        ],
                    }
                ],
            }
        ]
    }


def test_otlp_spans_are_redacted_in_fields_and_attributes(client, pii_project):
    response = client.post("/v1/traces", json.dumps(otlp_body()), content_type="application/json")
    assert response.status_code == 200, response.content
    trace = AgentTrace.objects.get(session_id="otel-session")
    assert trace.user_query == "charge me, I'm <EMAIL>"
    call = trace.tool_calls.get()
    assert call.tool_args == {"card": "<CREDIT_CARD>", "iban": "<IBAN>"}
    assert call.error == "gateway said <SECRET> is revoked"
    stored = json.dumps(trace.metadata)
    assert "<PHONE>" in stored and "<CUSTOM>" in stored and "<IP_ADDRESS>" in stored
    assert_nothing_sensitive_stored()
    assert counts_of(pii_project)["email"] >= 2


def test_trace_inputs_are_redacted_before_scoring_and_storage(client, pii_project):
    query = {
        "tests": ["answer_accuracy", "context_recall", "faithfulness"],
        "question": f"Which IBAN did {EMAIL} use?",
        "contexts": [
            {"id": "ctx1", "text": f"Customer {EMAIL} pays from {IBAN}."},
            {"id": "ctx2", "text": f"Support line {PHONE}."},
        ],
        "answer": IBAN,
        "ground_truth": f"{IBAN}",
        "relevant_context_ids": ["ctx1"],
    }
    response = client.post("/api/v1/trace", {"query": json.dumps(query)}, format="json")
    assert response.status_code == 200, response.content
    evaluation = TraceEvaluation.objects.get()
    assert evaluation.payload["question"] == "Which IBAN did <EMAIL> use?"
    assert evaluation.payload["answer"] == "<IBAN>"
    assert evaluation.payload["ground_truth"] == "<IBAN>"
    # The answer and the ground truth are redacted alike, so the metric still sees them agree.
    assert response.json()["evaluation_scores"]["answer_accuracy"] == 1.0, response.json()
    assert_nothing_sensitive_stored()
    assert counts_of(pii_project) == {"email": 2, "iban": 3, "phone": 1}


def test_natural_language_trace_query_is_redacted_as_text(client):
    text = f"Evaluate context_recall. Question: who is {EMAIL}? Context c1: {EMAIL} is Jane. Relevant: c1"
    response = client.post("/api/v1/trace", {"query": text}, format="json")
    assert response.status_code in (200, 400), response.content
    assert_nothing_sensitive_stored()


def test_redaction_is_off_by_default(api):
    # `api` is a key of the `default` project, whose redaction setting is the default: off.
    start = {"session_id": "plain", "user_query": f"I am {EMAIL}", "agent_name": "A"}
    assert api.post(f"{BASE}/traces", start, format="json").status_code == 201
    assert AgentTrace.objects.get(session_id="plain").user_query == f"I am {EMAIL}"
    assert not RedactionCount.objects.exists()


def test_a_request_with_nothing_to_redact_writes_no_count(client):
    start = {"session_id": "clean", "user_query": "List all clusters in Delhi", "agent_name": "A"}
    assert client.post(f"{BASE}/traces", start, format="json").status_code == 201
    assert not RedactionCount.objects.exists()


def test_the_ingestion_page_shows_the_projects_counts_per_day(client, pii_project):
    start = {"session_id": "c", "user_query": f"{EMAIL} {EMAIL}", "agent_name": "A"}
    assert client.post(f"{BASE}/traces", start, format="json").status_code == 201
    reader = UserFactory(username="pii-reader")
    MembershipFactory(project=pii_project, user=reader, role=ProjectRole.VIEWER)
    browser = Client()
    browser.force_login(reader)
    page = browser.get("/console/ingestion/").content.decode()
    assert "On for PII: email, phone, credit_card, iban, ip_address, secret, 1 custom pattern." in page
    row = page[page.index('id="redaction-counts"') :]
    assert "<td>2</td><td>0</td>" in row, row[:1500]


def test_turned_on_with_patch_project_settings_then_applied_to_the_next_request(db):
    # The whole path a project admin takes: PATCH the settings over the API, then the project's keys
    # send; the key cache must not keep serving the old settings.
    team = ProjectFactory(slug="team", name="Team")
    admin = project_key_client(team)
    start = {"session_id": "before", "user_query": f"I am {EMAIL}", "agent_name": "A"}
    assert admin.post(f"{BASE}/traces", start, format="json").status_code == 201
    settings = {"enabled": True, "detectors": ["email"], "custom_patterns": []}
    response = admin.patch("/api/v1/projects/team", {"redaction": settings}, format="json")
    assert response.status_code == 200, response.content
    start = {"session_id": "after", "user_query": f"I am {EMAIL}", "agent_name": "A"}
    assert admin.post(f"{BASE}/traces", start, format="json").status_code == 201
    assert AgentTrace.objects.get(session_id="before").user_query == f"I am {EMAIL}"
    assert AgentTrace.objects.get(session_id="after").user_query == "I am <EMAIL>"


@pytest.mark.parametrize("door", ["rest", "batch", "otlp", "trace"])
def test_the_counts_commit_with_the_rows_or_neither_does(client, pii_project, monkeypatch, door):
    """The day's counts are written in the transaction that stores what was redacted: when writing
    them fails, the request stores nothing (a 5xx the client retries), instead of rows whose
    redactions were never counted."""
    from django.db import DatabaseError

    from apps.traces.ingestion import redaction

    def broken(**kwargs):
        raise DatabaseError("the counts could not be written")

    monkeypatch.setattr(redaction, "redaction_counts_add", broken)
    broken_client = project_key_client(pii_project, username="raises")
    broken_client.raise_request_exception = False
    if door == "rest":
        body = {"session_id": "r-1", "user_query": f"I'm {EMAIL}", "agent_name": "Agent1"}
        response = broken_client.post(f"{BASE}/traces", body, format="json")
    elif door == "batch":
        response = broken_client.post(f"{BASE}/traces/batch", {"traces": [batch_trace("b-1")]}, format="json")
    elif door == "otlp":
        response = broken_client.post("/v1/traces", json.dumps(otlp_body()), content_type="application/json")
    else:
        query = {"tests": ["answer_accuracy"], "question": f"Who is {EMAIL}?", "answer": "Jane", "ground_truth": "Jane"}
        response = broken_client.post("/api/v1/trace", {"query": json.dumps(query)}, format="json")
    assert response.status_code >= 500, response.content
    assert not AgentTrace.objects.exists()
    assert not TraceEvaluation.objects.exists()
    assert not RedactionCount.objects.exists()
