"""Readers of stored JSON survive any value already stored. Rows written before the storage checks
(or through a door that skipped them) may hold integers beyond 64 bits (jsonb keeps 1e20 as
100000000000000000000, read back as a Python int) or deep nesting. Every reader of them answers:
the fingerprint, the judges' prompts, evaluate/session and /batch, online evaluation, the export."""

import json

import pytest

from apps.agentic.judges import JudgeInput, JudgeToolCall
from apps.agentic.models import AgentEvaluation
from apps.agentic.rules import services as rule_services
from apps.agentic.services import fingerprint
from apps.traces.models import ToolCall
from tests.agentic.factories import AgentEvaluationFactory, EvaluationRuleFactory
from tests.stored_json import BIG, STORED
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db

BASE = "/api/v1/metrics"


def _stored_trace(session_id: str, value):
    """A completed trace whose tool call holds `value`, written past the doors' checks (the ORM
    writes JSON with the stdlib encoder, which any value passes) as an older row would be."""
    trace = AgentTraceFactory(session_id=session_id, tool_calls=[{"tool_name": "list_k8s_clusters"}])
    ToolCall.objects.filter(trace=trace).update(tool_args=value, tool_result=value)
    assert ToolCall.objects.get(trace=trace).tool_args == value  # read back as stored: a Python int past 64 bits
    return trace


@pytest.mark.parametrize("value", STORED.values(), ids=STORED.keys())
def test_the_fingerprint_of_any_stored_value(value):
    data = JudgeInput(query="q", final_response="a", tool_calls=(JudgeToolCall("t", value, value),))
    same = JudgeInput(query="q", final_response="a", tool_calls=(JudgeToolCall("t", value, value),))
    other = JudgeInput(query="q", final_response="a", tool_calls=(JudgeToolCall("t", {"n": BIG + 1}, None),))
    assert fingerprint(data) == fingerprint(same) != fingerprint(other)


def test_values_orjson_can_encode_keep_their_fingerprint():
    """Fingerprints already stored stay valid: an ordinary input hashes exactly as before."""
    import hashlib

    import orjson

    data = JudgeInput(query="q", final_response="a", tool_calls=(JudgeToolCall("t", {"b": 1, "a": [2.5]}, "r"),))
    assert fingerprint(data) == hashlib.sha256(orjson.dumps(data.canonical(), option=orjson.OPT_SORT_KEYS)).hexdigest()


@pytest.mark.parametrize("value", STORED.values(), ids=STORED.keys())
def test_evaluate_session_and_batch(api, value):
    _stored_trace("stored-bad", value)
    AgentTraceFactory(session_id="innocent")
    response = api.post(f"{BASE}/evaluate/session", {"session_id": "stored-bad"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["session_id"] == "stored-bad"
    batch = api.post(
        f"{BASE}/evaluate/batch", {"session_ids": ["innocent", "stored-bad"], "force": True}, format="json"
    )
    assert batch.status_code == 200, batch.content
    assert {r["session_id"] for r in batch.json()["results"]} == {"innocent", "stored-bad"}
    # Re-use still recognises the unchanged trace by its fingerprint.
    again = api.post(f"{BASE}/evaluate/session", {"session_id": "stored-bad"}, format="json")
    assert again.status_code == 200
    assert AgentEvaluation.objects.filter(session_id="stored-bad").count() == 2


@pytest.mark.parametrize("value", STORED.values(), ids=STORED.keys())
def test_online_evaluation(value):
    trace = _stored_trace("online-bad", value)
    rule = EvaluationRuleFactory(name="all")
    assert rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])["evaluated"] == 1
    assert rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])["reused"] == 1


@pytest.mark.parametrize("value", STORED.values(), ids=STORED.keys())
def test_the_llm_judge_prompt(api, openai_server, value):
    for score in (5, 4, 3):
        openai_server.push_json({"explanation": "fine", "score": score})
    _stored_trace("llm-bad", value)
    response = api.post(f"{BASE}/evaluate/session", {"session_id": "llm-bad", "judge": "llm"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["judge"].startswith("openai:")
    user = openai_server.chat_requests[0]["messages"][1]["content"]
    payload = json.loads(user.split("<session>\n", 1)[1].rsplit("\n</session>", 1)[0])
    assert payload["tool_calls"][0]["tool_args"] == value


@pytest.mark.parametrize("value", STORED.values(), ids=STORED.keys())
def test_history_and_export(api, value):
    evaluation = AgentEvaluationFactory(trace=_stored_trace("export-bad", value))
    AgentEvaluation.objects.filter(pk=evaluation.pk).update(
        judge_fingerprint={"judge": "x", "weird": value}, manual_input={"tool_calls": [{"tool_args": value}]}
    )
    assert api.get(f"{BASE}/history").status_code == 200
    assert api.get(f"{BASE}/history/export-bad").status_code == 200
    inline = api.get(f"{BASE}/export?format=json")
    assert inline.status_code == 200, inline.content
    assert [r["session_id"] for r in json.loads(inline.json()["data"])] == ["export-bad"]
    for fmt in ("json", "jsonl"):
        streamed = api.get(f"{BASE}/export?format={fmt}&download=true")
        assert streamed.status_code == 200
        body = b"".join(streamed.streaming_content) if streamed.streaming else streamed.content
        assert b"export-bad" in body
        if fmt == "json":
            assert json.loads(body)[0]["session_id"] == "export-bad"
        else:
            assert json.loads(body.splitlines()[0])["session_id"] == "export-bad"
