"""Every operation of the OpenAPI document answers what the document says it answers.

The test reads the document the app serves (/api/schema/), then walks the API as a client would:
it creates a bot, a rubric, a test set, a question set, a trace, evaluations and a run through their
own operations, reads them back, and deletes them. Each real answer is validated against the
schema the document declares for that operation, status code and content type. The schemas are
made strict first (an object's undeclared property is a failure), so a field the document lacks
cannot be sent either. An operation of the document that the walk does not exercise fails the test:
a new endpoint needs a step here.
"""

import copy
import json
import re
import time
from datetime import datetime

import jsonschema
import pytest
from django.db import DatabaseError, connection
from drf_spectacular.generators import SchemaGenerator
from pydantic import BaseModel
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from apps.core.api.renderers import OrjsonRenderer
from apps.core.api.responses import AnswerShapeError, absent_if_none, respond
from apps.core.models import Project, ProjectRole
from apps.rubrics.models import RubricVersion
from apps.runs.models import AnchorCheck
from apps.scores.services import human_score_record
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import ApiKeyFactory, UserFactory, client_with_key, project_key_client
from tests.fakes.prometheus import FakeGrafana, canned_prometheus
from tests.rubrics.factories import rubric_body
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, review_create
from tests.runs.factories import rule as rule_verdict
from tests.testsets.factories import make_test_set_payload

METHODS = ("get", "post", "put", "patch", "delete")
# RFC 3339 as OpenAPI's date-time means it ("T", seconds, an offset or Z); jsonschema checks the
# format only with an optional package, so the check is written out here.
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
FORMATS = jsonschema.FormatChecker(formats=("uuid",))


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value) -> bool:
    if not isinstance(value, str):
        return True
    datetime.fromisoformat(value)
    return RFC3339.match(value) is not None


def _strict(node):
    """The schema with additionalProperties: false wherever an object lists its properties and says
    nothing about others (pydantic's models); free-form objects (dict fields) stay open."""
    if isinstance(node, dict):
        node = {key: _strict(value) for key, value in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(item) for item in node]
    return node


class Walk:
    """Sends requests, checks each answer against the document, and remembers what it exercised."""

    def __init__(self, document: dict):
        self.document = document
        self.components = _strict(document["components"])
        self.templates = {
            template: re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$")
            for template in document["paths"]
        }
        self.operations = {
            (method, template) for template, item in document["paths"].items() for method in item if method in METHODS
        }
        self.exercised: set[tuple[str, str]] = set()
        self.failures: list[str] = []

    def __call__(
        self,
        client,
        method: str,
        path: str,
        expect: int,
        *,
        body=None,
        raw: bytes | None = None,
        content_type: str | None = None,
        **extra,
    ):
        if raw is not None:
            response = getattr(client, method)(path, raw, content_type=content_type, **extra)
        elif body is not None:
            response = getattr(client, method)(path, body, format="json", **extra)
        else:
            response = getattr(client, method)(path, **extra)
        content = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code == expect, (method.upper(), path, response.status_code, content[:2000])
        self.check(method, path, response, content)
        if response.get("Content-Type", "").startswith("application/json") and content:
            return json.loads(content)
        return content

    def check(self, method: str, path: str, response, content: bytes) -> None:
        where = f"{method.upper()} {path} → {response.status_code}"
        bare = path.split("?", 1)[0]
        matches = [
            template
            for template, pattern in self.templates.items()
            if pattern.match(bare) and method in self.document["paths"][template]
        ]
        # A literal path ("/test-sets/import") wins over a template that also matches it.
        matches.sort(key=lambda t: t.count("{"))
        if not matches:
            self.failures.append(f"{where}: no operation of the document")
            return
        template = matches[0]
        self.exercised.add((method, template))
        declared = self.document["paths"][template][method]["responses"].get(str(response.status_code))
        if declared is None:
            self.failures.append(f"{where}: status not in the document")
            return
        media = declared.get("content")
        if not media:
            if content:
                self.failures.append(f"{where}: a body where the document declares none: {content[:200]!r}")
            return
        content_type = response.get("Content-Type", "").split(";", 1)[0].strip()
        if content_type not in media:
            self.failures.append(f"{where}: Content-Type {content_type!r}, the document declares {sorted(media)}")
            return
        instance = json.loads(content) if content_type == "application/json" else content.decode()
        schema = {**_strict(media[content_type]["schema"]), "components": self.components}
        validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
        for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
            self.failures.append(
                f"{where}: at {'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message[:300]}"
            )


@pytest.fixture
def prometheus_backend(settings):
    """A canned Prometheus API (a real local HTTP server) with two series, as PROMETHEUS_URL."""
    now = time.time()
    fake = FakeGrafana(
        canned=canned_prometheus(
            {"process_cpu_seconds_total": {"type": "counter", "help": "CPU time", "unit": ""}},
            [
                {"metric": {"job": "a"}, "values": [[now - 60, "1"], [now - 30, "3"]]},
                {"metric": {"job": "b"}, "values": [[now - 60, "2"]]},
            ],
        )
    )
    settings.PROMETHEUS_URL = fake.url
    yield fake
    fake.close()


PARIS = {
    "tests": [
        "answer_accuracy",
        "context_recall",
        "context_precision",
        "faithfulness",
        "answer_relevancy",
        "context_utilisation",
    ],
    "question": "What is the capital of France?",
    "contexts": [
        {"id": "ctx1", "text": "Paris is the capital of France."},
        {"id": "ctx2", "text": "Lyon is in France."},
    ],
    "answer": "Paris",
    "ground_truth": "Paris",
    "relevant_context_ids": ["ctx1"],
}

BOT = {
    "name": "Schema bot",
    "organization_id": "org1",
    "organization_name": "Org",
    "system_prompt": "Be brief.",
    "llm_config": {"provider": "demo", "model": "demo-1", "parameters": {"temperature": 0}},
    "harness_context": {"locale": "en"},
    "adapter": "demo",
    "tools": [
        {"name": "Search", "tool_name": "search_kb", "type": "function", "description": "Searches"},
        {"name": "Handoff", "tool_name": "live_handoff", "type": "function"},
    ],
    "knowledge_bases": [
        {
            "name": "Handbook",
            "documents": [
                {"title": "PTO", "text": "Employees accrue 15 days of PTO per year. Up to 5 days carry over."}
            ],
        }
    ],
}


def _database_down(execute, sql, params, many, context):
    raise DatabaseError("connection refused")


@pytest.fixture
def walk(api) -> Walk:
    raw_document = api.get("/api/schema/?format=json")
    assert raw_document.status_code == 200
    return Walk(json.loads(raw_document.content))


def test_every_operation_answers_what_the_document_declares(
    walk, api, staff_api, prometheus_backend, django_capture_on_commit_callbacks
):
    v1 = "/api/v1"

    # Bots.
    bot = walk(api, "post", f"{v1}/bots", 201, body=BOT)
    agent_id = bot["agent_id"]
    kb_id = bot["knowledge_bases"][0]["id"]
    walk(api, "get", f"{v1}/bots", 200)
    walk(api, "get", f"{v1}/bots/{agent_id}", 200)
    walk(api, "put", f"{v1}/bots/{agent_id}", 200, body={**BOT, "name": "Schema bot, renamed"})
    walk(api, "get", f"{v1}/bots/{agent_id}/context", 200)
    walk(api, "get", f"{v1}/bots/{agent_id}/knowledge-bases/{kb_id}/documents", 200)
    walk(api, "get", f"{v1}/bots/{'0' * 24}", 404)

    # Rubrics.
    rubric = walk(api, "post", f"{v1}/rubrics", 201, body={**rubric_body(agent_id), "changelog": "first"})
    rubric_id = rubric["rubric_id"]
    walk(api, "get", f"{v1}/rubrics?agent_id={agent_id}", 200)
    walk(api, "get", f"{v1}/rubrics/{rubric_id}", 200)
    walk(
        api,
        "put",
        f"{v1}/rubrics/{rubric_id}",
        200,
        body={**rubric_body(agent_id, name="Support rubric, second"), "version": 1, "changelog": "renamed"},
    )
    walk(api, "put", f"{v1}/rubrics/{rubric_id}", 409, body={**rubric_body(agent_id, name="Stale"), "version": 1})
    walk(api, "get", f"{v1}/rubrics/{rubric_id}/versions", 200)
    walk(api, "get", f"{v1}/rubrics/{rubric_id}/versions/1", 200)

    # Test sets: JSON, files, versions.
    test_set = walk(api, "post", f"{v1}/test-sets", 201, body=make_test_set_payload(agent_id, changelog="first"))
    test_set_id = test_set["test_set_id"]
    walk(api, "get", f"{v1}/test-sets?agent_id={agent_id}", 200)
    walk(api, "get", f"{v1}/test-sets/{test_set_id}", 200)
    walk(
        api,
        "put",
        f"{v1}/test-sets/{test_set_id}",
        200,
        body={**make_test_set_payload(agent_id, name="Support test set, second"), "version": 1},
    )
    walk(api, "get", f"{v1}/test-sets/{test_set_id}/versions", 200)
    walk(api, "get", f"{v1}/test-sets/{test_set_id}/versions/2", 200)
    exported = walk(api, "get", f"{v1}/test-sets/{test_set_id}/export?format=json", 200)
    walk(api, "get", f"{v1}/test-sets/{test_set_id}/export?format=jsonl&version=1", 200)
    csv_file = walk(api, "get", f"{v1}/test-sets/{test_set_id}/export?format=csv", 200)
    walk(api, "get", f"{v1}/test-sets/{test_set_id}/export?version=x", 422)
    walk(api, "post", f"{v1}/test-sets/{test_set_id}/import?format=csv", 200, raw=csv_file, content_type="text/csv")
    imported = walk(
        api,
        "post",
        f"{v1}/test-sets/import?format=json",
        201,
        raw=json.dumps({**exported, "name": "Imported"}).encode(),
        content_type="application/json",
    )

    # Question sets.
    questions = {
        "name": "Questions",
        "agent_id": agent_id,
        "questions": [{"question": "How much PTO carries over?", "expected_answer": "5 days"}],
    }
    dataset = walk(api, "post", f"{v1}/datasets", 201, body=questions)
    dataset_id = dataset["dataset_id"]
    walk(api, "get", f"{v1}/datasets", 200)
    walk(api, "get", f"{v1}/datasets/{dataset_id}", 200)
    walk(api, "put", f"{v1}/datasets/{dataset_id}", 200, body={**questions, "description": "edited"})

    # Traces (seed 000): start (then its idempotent retry), intent, tool calls, complete, batch.
    traces = f"{v1}/metrics/traces"
    start = {
        "session_id": "s-1",
        "user_query": "How many PTO days do I get?",
        "agent_name": "hr-bot",
        "metadata": {"channel": "chat"},
    }
    walk(api, "post", traces, 201, body=start)
    walk(api, "post", traces, 200, body=start)
    walk(
        api,
        "post",
        f"{traces}/s-1/intent",
        200,
        body={"intent": "pto_lookup", "resource_type": "policy", "operation": "read"},
    )
    call = {
        "tool_name": "search_kb",
        "tool_args": {"q": "pto"},
        "tool_result": {"hits": 1},
        "duration_ms": 12.5,
        "call_id": "c-1",
        "timestamp": "2026-01-08T10:29:58Z",
    }
    walk(api, "post", f"{traces}/s-1/tool-calls", 201, body=call)
    walk(api, "post", f"{traces}/s-1/tool-calls", 200, body=[call])
    walk(api, "post", f"{traces}/s-1/complete", 200, body={"final_response": "15 days a year.", "success": True})
    walk(api, "post", f"{traces}/s-1/complete", 409, body={"final_response": "Other.", "success": False})
    walk(
        api,
        "post",
        f"{traces}/batch",
        200,
        body={
            "traces": [
                {
                    "session_id": "s-2",
                    "user_query": "Reset my password",
                    "agent_name": "it-bot",
                    "intent_detected": "reset",
                    "tool_calls": [{"tool_name": "reset_password", "tool_args": {"user": "u1"}}],
                    "final_response": "Done.",
                    "success": True,
                    "start_time": "2026-01-08T10:29:55Z",
                },
                {"session_id": "s-3", "agent_name": "it-bot"},
            ]
        },
    )
    walk(api, "get", f"{v1}/metrics/trace/s-1", 200)
    walk(api, "get", f"{v1}/metrics/trace/nothing-here", 404)
    walk(api, "get", f"{v1}/metrics/trace/s-1/tool-calls?limit=1", 200)

    # The ingestion ledger of what the steps above sent (`default`'s): its admins', not this key's.
    walk(api, "get", f"{v1}/ingestion/ledger", 403)
    root = client_with_key(ApiKeyFactory(user__is_staff=True, user__is_superuser=True))
    ledger = walk(root, "get", f"{v1}/ingestion/ledger", 200)
    assert ledger["sources"]["rest"]["received"] > 0 and ledger["sources"]["batch"]["rejected"]
    walk(root, "get", f"{v1}/ingestion/ledger?source=online_evaluation&since=2026-01-01T00:00:00Z", 200)
    walk(root, "get", f"{v1}/ingestion/ledger?since=not-a-time", 422)
    walk(root, "get", f"{v1}/ingestion/ledger?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", 422)

    # Agentic evaluations (seed 000).
    metrics = f"{v1}/metrics"
    walk(api, "post", f"{metrics}/evaluate/session", 200, body={"session_id": "s-1"})
    walk(api, "post", f"{metrics}/evaluate/session", 422, body={"session_id": ""})
    walk(
        api,
        "post",
        f"{metrics}/evaluate/manual",
        200,
        body={
            "user_query": "How many PTO days?",
            "agent_response": "15 days.",
            "detected_intent": "pto_lookup",
            "tool_calls": [{"tool_name": "search_kb", "tool_args": {"q": "pto"}, "tool_result": "15 days"}],
        },
    )
    walk(api, "post", f"{metrics}/evaluate/batch", 200, body={"session_ids": ["s-1", "s-2", "missing"]})
    walk(api, "get", f"{metrics}/summary", 200)
    walk(api, "get", f"{metrics}/history?limit=2", 200)
    walk(api, "get", f"{metrics}/history/s-1", 200)
    walk(api, "get", f"{metrics}/export", 200)
    walk(api, "get", f"{metrics}/export?format=jsonl", 200)
    walk(api, "get", f"{metrics}/export?format=json&download=true", 200)
    walk(api, "get", f"{metrics}/export?format=jsonl&download=true", 200)
    walk(api, "get", f"{metrics}/health", 200)
    with connection.execute_wrapper(_database_down):
        walk(api, "get", f"{metrics}/health", 503)

    # Online evaluation rules: staff writes, anyone with read reads; a backfill answers a count.
    rules = f"{v1}/evaluation-rules"
    rule = walk(
        staff_api,
        "post",
        rules,
        201,
        body={"name": "nightly", "agent_name": "it-bot", "sample_rate": 0.5, "judge": "heuristic"},
    )
    walk(staff_api, "post", rules, 409, body={"name": "nightly"})
    walk(staff_api, "post", rules, 422, body={"name": "bad rate", "sample_rate": 2})
    # Rules are an editor's (`configure`): a key that only reads is refused.
    reader = client_with_key(ApiKeyFactory(user__username="schema-reader", scopes=["read"]))
    walk(reader, "post", rules, 403, body={"name": "not an editor"})
    walk(api, "get", rules, 200)
    walk(api, "get", f"{rules}/{rule['id']}", 200)
    walk(api, "get", f"{rules}/999999", 404)
    walk(staff_api, "put", f"{rules}/{rule['id']}", 200, body={"name": "nightly", "sample_rate": 1.0, "enabled": True})
    with django_capture_on_commit_callbacks(execute=True):
        walk(staff_api, "post", f"{rules}/{rule['id']}/backfill", 200, body={"since": "2020-01-01T00:00:00Z"})
    walk(
        staff_api,
        "post",
        f"{rules}/{rule['id']}/backfill",
        422,
        body={"since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"},
    )
    paused = walk(staff_api, "post", rules, 201, body={"name": "paused", "enabled": False})
    walk(staff_api, "post", f"{rules}/{paused['id']}/backfill", 409, body={"since": "2020-01-01T00:00:00Z"})
    walk(staff_api, "delete", f"{rules}/{paused['id']}", 204)

    # TRACE (seed 002) at both of its paths, and its history.
    walk(api, "post", "/trace", 200, body={"query": json.dumps(PARIS)})
    walk(api, "post", f"{v1}/trace?partial=true", 200, body={"query": {**PARIS, "answer": None}})
    walk(api, "post", "/trace", 400, body={"query": "{not json"})
    history = walk(api, "get", f"{v1}/trace/history?limit=1", 200)
    walk(api, "get", f"{v1}/trace/history/{history['results'][0]['id']}", 200)

    # NL metrics query (seed 001): an answer with data, and a failure that is an answer too.
    walk(api, "post", f"{v1}/metrics-query", 200, body={"query": "Show CPU usage for the last hour"})
    walk(api, "post", f"{v1}/metrics-query", 200, body={"query": "Show anomalies in CPU usage"})

    # Runs: one executed through the engine (tasks run in-process once the transaction commits),
    # then its results, a human review, and a second run that is cancelled before it starts.
    with django_capture_on_commit_callbacks(execute=True):
        run = walk(
            api,
            "post",
            f"{v1}/runs",
            201,
            body={
                "agent_id": agent_id,
                "test_set_id": test_set_id,
                "rubric_id": rubric_id,
                "judge_model": "heuristic",
                "label": "schema walk",
            },
        )
    run_id = run["run_id"]
    assert run["label"] == "schema walk" and run["bot_snapshot"]["documents"], "label and bot snapshot answered"
    walk(api, "get", f"{v1}/runs?agent_id={agent_id}", 200)
    assert walk(api, "get", f"{v1}/runs/{run_id}", 200)["status"] == "completed"
    results = walk(api, "get", f"{v1}/runs/{run_id}/results", 200)
    items = walk(api, "get", f"{v1}/runs/{run_id}/items?limit=2", 200)
    assert items["items"] and items["items"][0]["attempts"][0]["attempt"] == 1
    assert walk(api, "get", f"{v1}/runs/{run_id}/results?limit=2&offset=1", 200) == results[1:3]
    # Judge-human agreement, and a trace made a test case (the test set's next version).
    walk(api, "get", f"{v1}/rubrics/{rubric_id}/agreement", 200)
    walk(api, "get", f"{v1}/metrics/agreement?agent_name=hr-bot", 200)
    # An alignment trial: refused under 20 labels; tried on 24 whose judge already agrees (a
    # candidate cannot do better than kappa 1, so publishing is refused).
    trials = f"{v1}/rubrics/{rubric_id}/alignment-trials"
    trial_body = {"rule": "BRIEF_RESPONSES", "candidate": {"judge_model": "heuristic"}}
    walk(staff_api, "post", trials, 422, body=trial_body)
    labelled_run = EvaluationRunFactory(rubric_id=rubric_id, rubric_version=2)
    for n in range(24):
        verdict = n % 2 == 0
        labelled = EvaluationResultFactory(run=labelled_run, rubric_scores=[rule_verdict("BRIEF_RESPONSES", verdict)])
        review_create(result=labelled, kind="rule", key="BRIEF_RESPONSES", passed=verdict)
    with django_capture_on_commit_callbacks(execute=True):
        trial = walk(staff_api, "post", trials, 202, body=trial_body)
    walk(api, "get", trials, 200)
    walk(api, "get", f"{v1}/alignment-trials/{trial['id']}", 200)
    walk(api, "get", f"{v1}/alignment-trials/{'0' * 8}-0000-0000-0000-{'0' * 12}", 404)
    walk(staff_api, "post", f"{v1}/alignment-trials/{trial['id']}/publish", 409)
    # A metric's trial: the walk's agentic evaluations are too few labelled ones; then 24 are.
    metric_trials = f"{v1}/metrics/alignment-trials"
    metric_body = {"metric": "task_adherence", "candidate": {"judge_model": "heuristic"}}
    walk(staff_api, "post", metric_trials, 422, body=metric_body)
    for n in range(24):
        evaluation = AgentEvaluationFactory(task_adherence=0.9)
        human = {"kind": "metric", "key": "task_adherence", "passed": n % 2 == 0}
        human_score_record(subject_kind="agentic_evaluation", subject_id=evaluation.pk, **human)
    with django_capture_on_commit_callbacks(execute=True):
        metric_trial = walk(staff_api, "post", metric_trials, 202, body=metric_body)
    walk(api, "get", metric_trials, 200)
    walk(api, "get", f"{v1}/alignment-trials/{metric_trial['id']}", 200)
    # Judge anchors: the walk's run marked as anchors of its test-set version and judged again.
    anchors = f"{v1}/test-sets/{test_set_id}/anchors"
    walk(api, "post", anchors, 422, body={"version": 99})
    anchor = walk(api, "post", anchors, 201, body={"version": run["test_set_version"], "run_id": run_id})
    walk(api, "post", anchors, 409, body={"version": run["test_set_version"]})
    with django_capture_on_commit_callbacks(execute=True):
        check = walk(staff_api, "post", f"{v1}/anchors/{anchor['id']}/checks", 202)
    walk(api, "get", anchors, 200)
    report = walk(api, "get", f"{v1}/anchor-checks/{check['id']}", 200)
    # The engine's own heuristic verdicts, judged again by the same judge: nothing moves.
    assert (report["status"], report["changed"], report["judge_changes"]) == ("done", 0, []), report
    assert report["n"] > 0
    walk(api, "get", f"{v1}/anchor-checks/{'0' * 8}-0000-0000-0000-{'0' * 12}", 404)
    with django_capture_on_commit_callbacks(execute=False):
        walk(staff_api, "post", f"{v1}/anchors/{anchor['id']}/checks", 202)
    walk(staff_api, "post", f"{v1}/anchors/{anchor['id']}/checks", 409)
    walk(api, "delete", f"{v1}/anchors/{anchor['id']}", 409)
    AnchorCheck.objects.filter(status="pending").update(status="failed")
    walk(api, "delete", f"{v1}/anchors/{anchor['id']}", 204)
    walk(api, "delete", f"{v1}/anchors/{anchor['id']}", 404)
    from_traces = f"{v1}/test-sets/{test_set_id}/items/from-traces"
    walk(api, "post", from_traces, 422, body={"session_ids": ["no-such-session"]})
    walk(api, "post", from_traces, 409, body={"session_ids": ["s-1"], "version": 1})
    walk(api, "post", from_traces, 201, body={"session_ids": ["s-1"], "expected_outcome": "Says 15 days"})
    headers = walk.document["paths"]["/api/v1/runs/{run_id}/results"]["get"]["responses"]["200"]["headers"]
    assert {"X-Has-More", "Link"} <= set(headers), "the paging headers are documented"
    walk(api, "get", f"{v1}/runs/{run_id}/results?limit=0", 422)
    result_id = results[0]["result_id"]
    verdict = results[0]["criteria_scores"][0]["criterion"]
    walk(
        staff_api,  # a review needs `review`, which `api` (read..configure, made after core.0008) lacks
        "post",
        f"{v1}/results/{result_id}/reviews",
        201,
        body={"kind": "criterion", "key": verdict, "passed": False, "note": "too vague"},
    )
    walk(api, "get", f"{v1}/results/{result_id}/reviews", 200)
    walk(api, "get", f"{v1}/results/{result_id}", 200)
    walk(api, "post", f"{v1}/runs/{run_id}/cancel", 409)
    pending = walk(api, "post", f"{v1}/runs", 201, body={"dataset_id": dataset_id, "agent_id": agent_id})
    walk(api, "post", f"{v1}/runs/{pending['run_id']}/cancel", 200)
    same = walk(api, "get", f"{v1}/runs/{run_id}/compare/{run_id}?limit=10", 200)
    assert same["verdict"] == "within_noise" and same["mcnemar_p"] == 1.0 and same["judge_changed"] is False
    walk(api, "get", f"{v1}/runs/{run_id}/compare/{pending['run_id']}", 422)

    # Review queues: anyone with read reads, `review` writes (`api` holds configure, not review).
    queues = f"{v1}/queues"
    queue = walk(
        staff_api,
        "post",
        queues,
        201,
        body={"name": "Schema queue", "kind": "run_result", "include_unassessed": True, "sample_percent": 100},
    )
    walk(staff_api, "post", queues, 409, body={"name": "Schema queue", "kind": "run_result"})
    walk(api, "post", queues, 403, body={"name": "not a reviewer", "kind": "run_result"})
    walk(api, "get", queues, 200)
    walk(api, "get", f"{queues}/{queue['id']}", 200)
    walk(
        staff_api,
        "put",
        f"{queues}/{queue['id']}",
        200,
        body={"name": "Schema queue", "kind": "run_result", "sample_percent": 100},
    )
    walk(staff_api, "post", f"{queues}/{queue['id']}/fill", 200)
    walk(staff_api, "post", f"{queues}/{queue['id']}/items", 200, body={"target_id": result_id})
    item = walk(api, "get", f"{queues}/{queue['id']}/items?state=left", 200)["results"][0]
    walk(staff_api, "post", f"{queues}/{queue['id']}/items/{item['id']}/assign", 200, body={"username": "staff-user"})
    walk(staff_api, "post", f"{queues}/{queue['id']}/items/{item['id']}/claim", 200)
    walk(
        staff_api,
        "post",
        f"{queues}/{queue['id']}/items/{item['id']}/review",
        200,
        body={"verdicts": [{"kind": "criterion", "key": verdict, "passed": True}], "note": "fine"},
    )
    hand = walk(staff_api, "post", queues, 201, body={"name": "By hand", "kind": "run_result"})
    walk(staff_api, "post", f"{queues}/{hand['id']}/items", 201, body={"target_id": result_id})
    walk(staff_api, "delete", f"{queues}/{hand['id']}", 204)

    # Projects: a superuser creates one, its admin changes it and its members.
    root = UserFactory(username="schema-root", is_staff=True, is_superuser=True, password=None)
    root_api = client_with_key(ApiKeyFactory(user=root))
    walk(root_api, "post", f"{v1}/projects", 201, body={"name": "Schema team", "slug": "schema-team"})
    team_api = project_key_client(Project.objects.get(slug="schema-team"), role=ProjectRole.ADMIN)
    UserFactory(username="schema-member")
    walk(team_api, "get", f"{v1}/projects", 200)
    walk(team_api, "get", f"{v1}/projects/schema-team", 200)
    walk(team_api, "patch", f"{v1}/projects/schema-team", 200, body={"retention_days": 30})
    walk(
        team_api,
        "post",
        f"{v1}/projects/schema-team/members",
        201,
        body={"username": "schema-member", "role": "viewer"},
    )
    walk(team_api, "get", f"{v1}/projects/schema-team/members", 200)
    walk(team_api, "delete", f"{v1}/projects/schema-team/members/schema-member", 204)

    # Deletes need the admin scope.
    walk(staff_api, "delete", f"{v1}/metrics/trace/s-2", 204)
    walk(staff_api, "delete", f"{v1}/datasets/{dataset_id}", 204)
    walk(staff_api, "delete", f"{v1}/test-sets/{imported['test_set_id']}", 204)
    walk(staff_api, "delete", f"{v1}/rubrics/{rubric_id}", 204)
    walk(staff_api, "delete", f"{v1}/bots/{agent_id}", 409)
    spare = walk(api, "post", f"{v1}/bots", 201, body={"name": "Spare bot"})
    walk(staff_api, "delete", f"{v1}/bots/{spare['agent_id']}", 204)
    walk(staff_api, "delete", f"{v1}/test-sets/{test_set_id}", 204)
    walk(staff_api, "delete", f"{v1}/metrics/clear", 200)
    walk(api, "delete", f"{v1}/metrics/clear", 403)

    # The audit trail of all the above: the admin scope reads it.
    trail = walk(staff_api, "get", f"{v1}/audit?limit=500", 200)
    assert {"create", "update", "delete", "launch", "cancel", "clear"} <= {e["action"] for e in trail["events"]}
    walk(staff_api, "get", f"{v1}/audit?action=launch&since=2026-01-01T00:00:00Z", 200)
    walk(staff_api, "get", f"{v1}/audit?limit=0", 422)
    walk(api, "get", f"{v1}/audit", 403)

    assert not walk.failures, "answers that differ from the document:\n" + "\n".join(walk.failures)
    missed = sorted(walk.operations - walk.exercised)
    assert not missed, f"operations the walk never called (add a step for each): {missed}"


def test_llm_judged_answers_match_the_document(walk, api, openai_server, django_capture_on_commit_callbacks):
    """An LLM judge adds what the heuristic judge never writes (token usage on each verdict)."""
    openai_server.default = {"passed": True, "score": 0.8, "reasoning": "Turn 1 answers it."}
    v1 = "/api/v1"
    agent_id = walk(api, "post", f"{v1}/bots", 201, body=BOT)["agent_id"]
    rubric_id = walk(api, "post", f"{v1}/rubrics", 201, body=rubric_body(agent_id))["rubric_id"]
    test_set_id = walk(api, "post", f"{v1}/test-sets", 201, body=make_test_set_payload(agent_id))["test_set_id"]
    with django_capture_on_commit_callbacks(execute=True):
        run = walk(
            api,
            "post",
            f"{v1}/runs",
            201,
            body={"agent_id": agent_id, "test_set_id": test_set_id, "rubric_id": rubric_id},
        )
    assert walk(api, "get", f"{v1}/runs/{run['run_id']}", 200)["judge"] == "openai:judge-model"
    results = walk(api, "get", f"{v1}/runs/{run['run_id']}/results", 200)
    assert any("usage" in verdict for result in results for verdict in result["criteria_scores"] or [])
    walk(api, "get", f"{v1}/results/{results[0]['result_id']}", 200)
    assert all(
        verdict["fingerprint"]["model"] == "judge-model"
        for verdict in results[0]["criteria_scores"]
        if verdict["kind"] == "success_criterion"
    )
    walk(api, "get", f"{v1}/runs/{run['run_id']}/compare/{run['run_id']}", 200)
    walk(api, "post", f"{v1}/metrics/evaluate/manual", 200, body={"user_query": "PTO?", "agent_response": "15 days."})
    assert not walk.failures, "answers that differ from the document:\n" + "\n".join(walk.failures)


def test_a_version_stored_before_a_limit_was_tightened_still_reads(walk, api):
    """Answers are validated by their Out models, which carry the document's types but not the input
    limits: a version saved when a rule id could hold a space and a name 300 characters is served."""
    agent_id = walk(api, "post", "/api/v1/bots", 201, body={"name": "Limits bot"})["agent_id"]
    rubric_id = walk(api, "post", "/api/v1/rubrics", 201, body=rubric_body(agent_id))["rubric_id"]
    version = RubricVersion.objects.get(rubric_id=rubric_id, version=1)
    version.snapshot["rules"][0].update(id="BRIEF RESPONSES", name="n" * 300)
    version.save(update_fields=["snapshot"])
    rule = walk(api, "get", f"/api/v1/rubrics/{rubric_id}/versions/1", 200)["rules"][0]
    assert (rule["id"], len(rule["name"])) == ("BRIEF RESPONSES", 300)
    assert not walk.failures, walk.failures


def _models(cls=BaseModel):
    for sub in cls.__subclasses__():
        yield sub
        yield from _models(sub)


def test_no_two_models_share_a_component_name():
    """drf-spectacular names a pydantic model's component by its class name alone and silences the
    collision warning: a second model of the same name is documented as the first. That is how the
    TRACE answer was once documented as the agent trace (both were `TraceOut`)."""
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    owners: dict[str, set[str]] = {}
    for model in _models():
        if model.__module__.startswith("apps.") and model.__name__ in components:
            owners.setdefault(model.__name__, set()).add(f"{model.__module__}.{model.__qualname__}")
    shared = {name: sorted(found) for name, found in owners.items() if len(found) > 1}
    assert not shared, shared


def test_the_strict_copy_refuses_a_field_the_document_lacks():
    schema = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
    validator = jsonschema.Draft202012Validator(_strict(copy.deepcopy(schema)))
    assert validator.is_valid({"detail": "x"})
    assert not validator.is_valid({"detail": "x", "extra": 1})
    free_form = _strict({"type": "object", "additionalProperties": True})
    assert jsonschema.Draft202012Validator(free_form).is_valid({"anything": 1})


class _Answer(BaseModel):
    name: str
    values: dict
    count: int | None = absent_if_none()


def test_respond_sends_the_models_fields_only():
    response = respond(
        _Answer, {"name": "x", "values": {"n": 1}, "secret": "never sent"}, status=201, headers={"ETag": '"v1"'}
    )
    assert (response.status_code, response["ETag"]) == (201, '"v1"')
    # count is left out, not sent as null; the undeclared key is dropped.
    assert json.loads(OrjsonRenderer().render(response.data)) == {"name": "x", "values": {"n": 1}}


class _AnswerWithoutName(APIView):
    authentication_classes = permission_classes = ()

    def get(self, request):
        return respond(_Answer, {"values": {}})


def test_respond_refuses_data_without_a_declared_field():
    with pytest.raises(AnswerShapeError):
        respond(_Answer, {"values": {}})
    # Through a view it is the server's error (500), not a 422 blaming the client's request.
    response = _AnswerWithoutName.as_view()(APIRequestFactory().get("/api/v1/anything"))
    assert (response.status_code, response.data) == (500, {"detail": "Internal server error."})


def test_respond_keeps_big_ints_of_json_columns_exact():
    # jsonb reads a stored 1e20 back as an int past 64 bits; the renderer's stdlib fallback writes it.
    response = respond(_Answer, {"name": "x", "values": {"n": 10**20}, "count": 3})
    assert OrjsonRenderer().render(response.data) == b'{"name":"x","values":{"n":100000000000000000000},"count":3}'


@pytest.mark.django_db
def test_out_schemas_read_rows_with_what_the_answer_adds():
    from apps.bots.api.schemas import BotContextOut
    from apps.core.api.attributes import with_attributes
    from apps.traces.api.schemas import ToolCallPageOut
    from tests.bots.factories import BotFactory
    from tests.traces.factories import AgentTraceFactory

    trace = AgentTraceFactory(tool_calls=[{"tool_name": "search"}, {"tool_name": "fetch"}])
    calls = list(trace.tool_calls.order_by("seq"))
    answer = respond(
        ToolCallPageOut, with_attributes(trace, tool_calls=calls, tool_calls_total=9, tool_calls_next=None)
    ).data
    assert (answer["session_id"], answer["tool_calls_total"]) == (trace.session_id, 9)
    assert [c["seq"] for c in answer["tool_calls"]] == [c.seq for c in calls]
    # The added values live on the wrapper only: the row (perhaps cached, shared) never carries them.
    assert not hasattr(trace, "tool_calls_total")

    bot = BotFactory(llm_provider="openai", llm_model="gpt-4.1")
    context = respond(BotContextOut, bot).data
    # The contract's names read the row's: bot_id is agent_id, the llm settings grouped.
    assert (context["bot_id"], context["bot_name"]) == (bot.agent_id, bot.name)
    assert context["llm_config"] == {"provider": "openai", "model": "gpt-4.1", "parameters": bot.llm_parameters}


# The query and header parameters of every operation, as the document listed them when the views
# still wrote their OpenApiParameters by hand (captured before apps.core.api.query_params): reading
# them from the query models must not rename, add or lose one.
PARAMETERS_BEFORE_QUERY_MODELS = {
    "GET /api/v1/audit": [
        ("query", "action"),
        ("query", "actor"),
        ("query", "limit"),
        ("query", "object_id"),
        ("query", "object_type"),
        ("query", "offset"),
        ("query", "since"),
        ("query", "until"),
    ],
    "GET /api/v1/datasets": [("query", "agent_id")],
    "GET /api/v1/ingestion/ledger": [("query", "since"), ("query", "source"), ("query", "until")],
    "GET /api/v1/metrics/agreement": [("query", "agent_name")],
    "GET /api/v1/metrics/export": [("query", "download"), ("query", "format")],
    "GET /api/v1/metrics/alignment-trials": [("query", "agent_name")],
    "GET /api/v1/metrics/history": [
        ("query", "agent_name"),
        ("query", "limit"),
        ("query", "min_score"),
        ("query", "offset"),
        ("query", "operation"),
    ],
    "GET /api/v1/metrics/trace/{session_id}/tool-calls": [("query", "after"), ("query", "limit")],
    "GET /api/v1/queues/{queue_id}/items": [("query", "limit"), ("query", "offset"), ("query", "state")],
    "GET /api/v1/rubrics": [("query", "agent_id")],
    "GET /api/v1/runs": [("query", "agent_id"), ("query", "limit"), ("query", "status")],
    "GET /api/v1/runs/{run_id}/compare/{other_run_id}": [("query", "limit")],
    "GET /api/v1/runs/{run_id}/items": [("query", "flaky"), ("query", "limit"), ("query", "offset")],
    "GET /api/v1/runs/{run_id}/results": [
        ("query", "item_type"),
        ("query", "limit"),
        ("query", "offset"),
        ("query", "passed"),
    ],
    "GET /api/v1/test-sets": [("query", "agent_id")],
    "GET /api/v1/test-sets/{test_set_id}/export": [("query", "format"), ("query", "version")],
    "GET /api/v1/trace/history": [("query", "limit"), ("query", "offset"), ("query", "outcome"), ("query", "test")],
    "POST /api/v1/metrics/traces/{session_id}/tool-calls": [("header", "Idempotency-Key")],
    "POST /api/v1/test-sets/import": [
        ("query", "agent_id"),
        ("query", "description"),
        ("query", "format"),
        ("query", "name"),
    ],
    "POST /api/v1/test-sets/{test_set_id}/import": [("query", "format")],
    "POST /api/v1/test-sets/{test_set_id}/items/from-traces": [("header", "If-Match")],
    "POST /api/v1/trace": [("query", "partial")],
    "POST /trace": [("query", "partial")],
    "PUT /api/v1/rubrics/{rubric_id}": [("header", "If-Match")],
    "PUT /api/v1/test-sets/{test_set_id}": [("header", "If-Match")],
}


def test_query_models_document_the_same_parameters_as_before():
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    found = {}
    for path, operations in paths.items():
        for method, operation in operations.items():
            named = sorted((p["in"], p["name"]) for p in operation.get("parameters", []) if p["in"] != "path")
            if named:
                found[f"{method.upper()} {path}"] = named
    expected = {key: [tuple(p) for p in params] for key, params in PARAMETERS_BEFORE_QUERY_MODELS.items()}
    assert found == expected


def test_query_parameters_come_from_the_query_models_fields():
    from typing import Literal

    from pydantic import Field

    from apps.core.api.query_params import query_parameters

    class _Query(BaseModel):
        state: Literal["open", "closed"] | None = Field(default=None, description="Only items in this state.")
        limit: int = Field(default=50, ge=1, le=500)
        run: str

    by_name = {p.name: p for p in query_parameters(_Query)}
    assert list(by_name) == ["state", "limit", "run"]
    # Optional in the model is optional in the document, and of its type, not "or null": a query
    # string cannot send null.
    assert (by_name["state"].required, by_name["state"].type) == (False, {"type": "string", "enum": ["open", "closed"]})
    assert by_name["state"].description == "Only items in this state."
    assert by_name["limit"].type == {"type": "integer", "default": 50, "minimum": 1, "maximum": 500}
    assert by_name["run"].required is True
    assert all(p.location == "query" for p in by_name.values())
