"""A key acts in its own project only: the attacks of a key of project B on project A's traces.

Each test performs the attack with B's key and asserts that it learns nothing of A (404, as for a
session that exists nowhere) and changes nothing in A."""

import json

import pytest

from apps.core.models import Project, ProjectRole
from apps.traces.models import AgentTrace
from tests.core.factories import ProjectFactory, project_key_client
from tests.traces.test_otlp import _json_body

pytestmark = pytest.mark.django_db

TRACES = "/api/v1/metrics/traces"
TRACE = "/api/v1/metrics/trace"


@pytest.fixture
def projects():
    return ProjectFactory(slug="alpha"), ProjectFactory(slug="beta")


@pytest.fixture
def alpha_api(projects):
    return project_key_client(projects[0], role=ProjectRole.ADMIN, username="alice")


@pytest.fixture
def beta_api(projects):
    return project_key_client(projects[1], role=ProjectRole.ADMIN, username="bob")


def _start(api, session_id="s-1", query="Where are my clusters?"):
    return api.post(TRACES, {"session_id": session_id, "user_query": query, "agent_name": "agent"}, format="json")


def test_the_same_session_id_in_two_projects_is_two_traces(alpha_api, beta_api, projects):
    assert _start(alpha_api, query="alpha's question").status_code == 201
    # No 409: a conflict would tell B that A holds this session id.
    response = _start(beta_api, query="beta's question")
    assert response.status_code == 201, response.content
    alpha, beta = projects
    assert AgentTrace.objects.get(project=alpha, session_id="s-1").user_query == "alpha's question"
    assert AgentTrace.objects.get(project=beta, session_id="s-1").user_query == "beta's question"
    assert alpha_api.get(f"{TRACE}/s-1").json()["user_query"] == "alpha's question"
    assert beta_api.get(f"{TRACE}/s-1").json()["user_query"] == "beta's question"


def test_another_projects_session_reads_as_missing(alpha_api, beta_api):
    _start(alpha_api, session_id="secret")
    hidden, missing = beta_api.get(f"{TRACE}/secret"), beta_api.get(f"{TRACE}/never-was")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["detail"] == "No trace found for session secret"
    assert beta_api.get(f"{TRACE}/secret/tool-calls").status_code == 404


def test_another_project_cannot_write_into_a_trace(alpha_api, beta_api, projects):
    _start(alpha_api, session_id="s-1")
    assert beta_api.post(f"{TRACES}/s-1/intent", {"intent": "steal"}, format="json").status_code == 404
    call = {"tool_name": "exfiltrate", "tool_args": {}, "tool_result": None}
    assert beta_api.post(f"{TRACES}/s-1/tool-calls", call, format="json").status_code == 404
    assert (
        beta_api.post(f"{TRACES}/s-1/complete", {"final_response": "x", "success": False}, format="json").status_code
        == 404
    )
    trace = AgentTrace.objects.get(project=projects[0], session_id="s-1")
    assert (trace.intent_detected, trace.tool_call_count, trace.status) == (None, 0, "active")


def test_another_project_cannot_delete_a_trace(alpha_api, beta_api, projects):
    _start(alpha_api, session_id="s-1")
    assert beta_api.delete(f"{TRACE}/s-1").status_code == 404
    assert AgentTrace.objects.filter(project=projects[0], session_id="s-1").exists()


def test_a_batch_with_another_projects_session_id_creates_its_own(alpha_api, beta_api, projects):
    trace = {"session_id": "s-1", "user_query": "q", "agent_name": "a", "final_response": "r", "success": True}
    assert alpha_api.post(f"{TRACES}/batch", {"traces": [trace]}, format="json").json()["accepted_count"] == 1
    answer = beta_api.post(f"{TRACES}/batch", {"traces": [{**trace, "user_query": "other"}]}, format="json").json()
    assert answer["accepted"] == [{"index": 0, "session_id": "s-1", "status": "created"}]
    assert AgentTrace.objects.filter(session_id="s-1").count() == 2


def test_otlp_spans_land_in_the_keys_project_and_never_merge_into_anothers(alpha_api, beta_api, projects):
    body = json.dumps(_json_body())
    assert alpha_api.post("/v1/traces", body, content_type="application/json").status_code == 200
    trace = AgentTrace.objects.get(otel_trace_id="5b8efff798038103d269b633813fc60c")
    assert trace.project == projects[0]
    calls_before = trace.tool_call_count
    # B sends A's trace id with spans of its own (a trace that crossed both teams' services, or a
    # replay): B's own trace, A's unchanged, and nothing refused (a `conflict` told B that A holds it).
    replay = _json_body()
    for span in replay["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["spanId"] = span["spanId"][:-2] + "f" + span["spanId"][-1]
        if "parentSpanId" in span:
            span["parentSpanId"] = span["parentSpanId"][:-2] + "f" + span["parentSpanId"][-1]
    response = beta_api.post("/v1/traces", json.dumps(replay), content_type="application/json")
    assert response.status_code == 200 and response.json() == {}
    trace.refresh_from_db()
    assert trace.tool_call_count == calls_before
    theirs = AgentTrace.objects.get(project=projects[1])
    assert theirs.otel_trace_id == trace.otel_trace_id and theirs.tool_call_count == 1
    assert beta_api.get(f"{TRACE}/{theirs.session_id}").json()["tool_calls"][0]["tool_name"] == "search"


def test_contract_calls_work_with_a_key_of_any_project(beta_api, projects):
    # A contract client never names a project: the key's project is implied.
    assert _start(beta_api).status_code == 201
    assert (
        beta_api.post(f"{TRACES}/s-1/complete", {"final_response": "ok", "success": True}, format="json").status_code
        == 200
    )
    assert beta_api.get(f"{TRACE}/s-1").json()["status"] == "completed"
    assert Project.objects.default().pk != projects[1].pk
    assert not AgentTrace.objects.filter(project=Project.objects.default()).exists()


def test_the_stale_trace_reaper_closes_only_the_stale_trace_of_a_shared_session_id(projects):
    """The reaper picks stale traces by session id; the same id in another project is another trace,
    started just now, which must stay open (it used to be the one closed: the newest of that id)."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.traces import services

    stale, _ = services.trace_start(session_id="shared", user_query="q", agent_name="a", project_id=projects[0].pk)
    fresh, _ = services.trace_start(session_id="shared", user_query="q", agent_name="a", project_id=projects[1].pk)
    AgentTrace.objects.filter(pk=stale.pk).update(start_time=timezone.now() - timedelta(hours=3))

    assert services.trace_fail_stale(older_than=timedelta(hours=1)) == 1

    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.status == AgentTrace.Status.FAILED
    assert fresh.status == AgentTrace.Status.ACTIVE


def test_spans_waiting_in_one_project_never_merge_into_anothers_trace(alpha_api, beta_api, projects, settings):
    """A's children wait for their root; B sends a root with the same trace id (a trace that crossed
    both teams' services, or a replay): B's trace is made from B's spans only, and A's children,
    whose root never came to A, are A's orphans (counted in A's ledger), never B's tool calls."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.traces.ledger_selectors import ingestion_ledger
    from apps.traces.models import OtlpSpan
    from apps.traces.tasks import prune_otlp_spans, settle_otlp_traces
    from tests.traces.test_otlp_assembly import PROTOBUF, FakeTrace, body

    alpha, beta = projects
    trace = FakeTrace(seed=31)
    assert alpha_api.post("/v1/traces", body(trace.tools(3)), content_type=PROTOBUF).status_code == 200
    assert beta_api.post("/v1/traces", body([trace.root()]), content_type=PROTOBUF).status_code == 200
    settle_otlp_traces()  # the reaper does not merge them either
    stored = AgentTrace.objects.get(otel_trace_id=trace.hex)
    assert stored.project == beta and stored.tool_call_count == 0 and not stored.tool_calls.exists()
    assert OtlpSpan.objects.filter(otel_trace_id=trace.hex, payload__isnull=False).count() == 3

    settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS = 1
    OtlpSpan.objects.update(received_at=timezone.now() - timedelta(hours=2))
    prune_otlp_spans()
    now = timezone.now()
    window = {"since": now - timedelta(days=1), "until": now}
    a, b = ingestion_ledger(project=alpha, **window)["otlp"], ingestion_ledger(project=beta, **window)["otlp"]
    assert (a.received, a.stored, a.dropped, a.balanced) == (3, 0, {"orphan": 3}, True)
    assert (b.received, b.stored, b.dropped, b.balanced) == (1, 1, {}, True)
