"""The ingestion ledger per project: every door (REST with its one-statement fast path, batch, OTLP
with the reaper's corrections) writes into the ledger of the project it stores in, and every read
(the API, compaction, /metrics) keeps projects apart. A key of project B must learn nothing of A's
traffic from the ledger: not its counts, not its reasons.

Each test sends what two tenants' agents would send, through the same endpoints, then reads each
project's ledger back and checks it against the rows each project holds; on PostgreSQL the REST
writes take the fast path (ingestion_entry_cte) and the compaction its single statement."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.models import Project, ProjectRole
from apps.traces.ingestion.otlp import services as otlp_services
from apps.traces.ledger import ingestion_ledger_compact, ingestion_record
from apps.traces.ledger_selectors import ingestion_ledger
from apps.traces.models import AgentTrace, IngestionEntry, OtlpSpan
from apps.traces.tasks import prune_otlp_spans
from tests.core.factories import ApiKeyFactory, MembershipFactory, ProjectFactory, client_with_key, project_key_client
from tests.prometheus_text import sample
from tests.traces.test_otlp_assembly import PROTOBUF, FakeTrace, body

pytestmark = pytest.mark.django_db

TRACES = "/api/v1/metrics/traces"
LEDGER = "/api/v1/ingestion/ledger"
CALL = {"tool_name": "list_k8s_clusters", "tool_args": {"datacenter": "Delhi"}, "tool_result": [{"name": "prod-01"}]}


@pytest.fixture
def projects():
    return ProjectFactory(slug="alpha", name="Alpha"), ProjectFactory(slug="beta", name="Beta")


@pytest.fixture
def alpha_api(projects):
    """An admin's key of alpha with every scope: it ingests and reads alpha's ledger."""
    return project_key_client(projects[0], role=ProjectRole.ADMIN, username="alice")


@pytest.fixture
def beta_api(projects):
    return project_key_client(projects[1], role=ProjectRole.ADMIN, username="bob")


def post(api, path, data):
    return api.post(path, data=json.dumps(data), content_type="application/json")


def counts(project, source: str):
    now = timezone.now()
    return ingestion_ledger(project=project, since=now - timedelta(days=3), until=now + timedelta(seconds=1))[source]


def rest_lifecycle(api, session_id: str, *, calls: int = 1) -> None:
    """A start, `calls` tool calls, a retried call, a completion, and a 404: what an agent sends."""
    assert post(api, TRACES, {"session_id": session_id, "user_query": "q", "agent_name": "A"}).status_code == 201
    for i in range(calls):
        assert post(api, f"{TRACES}/{session_id}/tool-calls", dict(CALL, call_id=f"c{i}")).status_code == 201
    assert post(api, f"{TRACES}/{session_id}/tool-calls", dict(CALL, call_id="c0")).status_code == 200
    assert post(api, f"{TRACES}/{session_id}/complete", {"final_response": "ok", "success": True}).status_code == 200
    assert post(api, f"{TRACES}/nowhere/intent", {"intent": "x"}).status_code == 404


# --- writes: each door lands in the project it stores in ------------------------------------------


def test_rest_entries_and_refusals_land_in_the_keys_project(alpha_api, beta_api, projects):
    alpha, beta = projects
    rest_lifecycle(alpha_api, "a-1", calls=3)
    rest_lifecycle(beta_api, "b-1", calls=1)
    # B's refusals: a NUL (422) and a write into A's session (404 for B, and counted in B only).
    assert post(beta_api, TRACES, {"session_id": "x\u0000", "user_query": "q", "agent_name": "A"}).status_code == 422
    assert post(beta_api, f"{TRACES}/a-1/tool-calls", dict(CALL, call_id="steal")).status_code == 404

    a, b = counts(alpha, "rest"), counts(beta, "rest")
    assert (a.received, a.stored, a.duplicate, a.rejected) == (7, 5, 1, {"not_found": 1})
    assert (b.received, b.stored, b.duplicate, b.rejected) == (7, 3, 1, {"not_found": 2, "nul_character": 1})
    assert a.balanced and b.balanced
    # Nothing of either went to `default`.
    assert counts(Project.objects.default(), "rest").is_empty
    assert AgentTrace.objects.get(project=alpha).tool_call_count == 3


def test_batch_entries_land_in_the_keys_project(alpha_api, beta_api, projects):
    item = {"session_id": "s", "user_query": "q", "agent_name": "A", "final_response": "r", "success": True}
    traces = [dict(item, session_id=f"a-{i}") for i in range(3)] + [dict(item, session_id="bad", user_query="")]
    assert post(alpha_api, f"{TRACES}/batch", {"traces": traces}).json()["accepted_count"] == 3
    assert post(alpha_api, f"{TRACES}/batch", {"traces": traces[:1]}).json()["accepted_count"] == 1  # a retry
    assert post(beta_api, f"{TRACES}/batch", {"traces": [dict(item, session_id="b-1")]}).json()["accepted_count"] == 1
    assert post(beta_api, f"{TRACES}/batch", {"traces": []}).status_code == 422  # refused whole at the edge

    a, b = counts(projects[0], "batch"), counts(projects[1], "batch")
    assert (a.received, a.stored, a.duplicate, a.rejected, a.balanced) == (5, 3, 1, {"invalid": 1}, True)
    assert (b.received, b.stored, b.duplicate, b.rejected, b.balanced) == (2, 1, 0, {"invalid": 1}, True)
    assert AgentTrace.objects.filter(project=projects[0]).count() == 3


def test_otlp_exports_and_the_reapers_orphan_correction_land_in_the_senders_project(
    alpha_api, beta_api, projects, settings
):
    """A's children whose root never comes are dropped by the prune, and the correction that moves
    them from stored to dropped is A's: A balances, and B's ledger never hears of them."""
    alpha, beta = projects
    settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS = 1
    orphan, whole = FakeTrace(seed=21), FakeTrace(seed=22)
    assert alpha_api.post("/v1/traces", body(orphan.tools(3)), content_type=PROTOBUF).status_code == 200
    assert beta_api.post("/v1/traces", body([whole.root(), *whole.tools(2)]), content_type=PROTOBUF).status_code == 200
    arrived = timezone.now() - timedelta(hours=30)
    OtlpSpan.objects.filter(otel_trace_id=orphan.hex).update(received_at=arrived)
    IngestionEntry.objects.filter(project=alpha).update(at=arrived)

    assert prune_otlp_spans() >= 3
    correction = IngestionEntry.objects.get(stored__lt=0)
    assert (correction.project_id, correction.stored, correction.reasons) == (
        alpha.pk,
        -3,
        {"dropped": {"orphan": 3}},
    )
    assert correction.at == arrived.replace(minute=0, second=0, microsecond=0)
    a, b = counts(alpha, "otlp"), counts(beta, "otlp")
    assert (a.received, a.stored, a.dropped, a.balanced) == (3, 0, {"orphan": 3}, True)
    assert (b.received, b.stored, b.dropped, b.balanced) == (3, 3, {}, True)


def test_a_waiting_span_from_before_the_ledger_was_per_project_is_corrected_in_default(settings, projects):
    """A span stored waiting before this change has no project in its payload: its arrival was
    counted in the ledger that is now `default`'s (migration traces.0013), so its correction is too."""
    settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS = 1
    arrived = timezone.now() - timedelta(hours=30)
    record = otlp_services.SpanRecord(
        trace_id="c" * 32,
        span_id="d" * 16,
        parent_id="e" * 16,
        name="t",
        kind="tool",
        is_root=False,
        start_ns=1,
        end_ns=2,
    )
    OtlpSpan.objects.create(
        otel_trace_id=record.trace_id, span_id=record.span_id, payload=record.to_payload(), received_at=arrived
    )
    ingestion_record(project=None, source="otlp", received=1, stored=1, at=arrived)
    prune_otlp_spans()
    default = counts(Project.objects.default(), "otlp")
    assert (default.received, default.stored, default.dropped, default.balanced) == (1, 0, {"orphan": 1}, True)
    assert counts(projects[0], "otlp").is_empty


def test_a_cap_correction_at_assembly_is_the_senders(alpha_api, projects, settings):
    """Children that waited and are refused by the tool call cap when the root comes: moved from
    stored to dropped in the ledger of the project that sent them, which balances."""
    settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = 2
    trace = FakeTrace(seed=23)
    assert alpha_api.post("/v1/traces", body(trace.tools(4)), content_type=PROTOBUF).status_code == 200
    assert alpha_api.post("/v1/traces", body([trace.root()]), content_type=PROTOBUF).status_code == 200
    correction = IngestionEntry.objects.get(stored__lt=0)
    assert (correction.project_id, correction.stored) == (projects[0].pk, -2)
    a = counts(projects[0], "otlp")
    assert (a.received, a.stored, a.dropped, a.balanced) == (5, 3, {"trace_cap": 2}, True)
    assert counts(projects[1], "otlp").is_empty and counts(Project.objects.default(), "otlp").is_empty


def test_the_invariant_holds_per_project_across_every_door(alpha_api, beta_api, projects):
    """received = stored + duplicate + rejected + dropped, project by project, and what each ledger
    calls stored is what that project's tables hold."""
    rest_lifecycle(alpha_api, "a-1", calls=2)
    rest_lifecycle(beta_api, "b-1", calls=4)
    item = {"session_id": "batch-1", "user_query": "q", "agent_name": "A", "final_response": "r", "success": True}
    post(beta_api, f"{TRACES}/batch", {"traces": [item, dict(item, session_id="batch-2", user_query="")]})
    trace = FakeTrace(seed=24)
    alpha_api.post("/v1/traces", body([trace.root(), *trace.tools(3)]), content_type=PROTOBUF)
    for project in projects:
        for source in ("rest", "batch", "otlp"):
            c = counts(project, source)
            assert c.balanced and c.received == c.stored + c.duplicate + c.rejected_total + c.dropped_total, source
    assert counts(projects[0], "rest").stored == 4 and counts(projects[1], "rest").stored == 6
    assert counts(projects[1], "batch").stored == 1 and counts(projects[0], "batch").is_empty
    assert counts(projects[0], "otlp").stored == 4 and counts(projects[1], "otlp").is_empty


# --- reads: the API answers for the caller's project ----------------------------------------------


def test_a_key_of_b_never_sees_as_ledger(alpha_api, beta_api, projects):
    rest_lifecycle(alpha_api, "a-1", calls=5)
    rest_lifecycle(beta_api, "b-1", calls=1)
    alpha_view, beta_view = alpha_api.get(LEDGER), beta_api.get(LEDGER)
    assert alpha_view.status_code == beta_view.status_code == 200
    assert alpha_view.json()["sources"]["rest"]["received"] == 9
    assert beta_view.json()["sources"]["rest"]["received"] == 5
    assert beta_view.json()["sources"]["rest"]["stored"] == 3


def test_only_the_projects_admins_read_its_ledger(projects):
    alpha = projects[0]
    ingestion_record(project=alpha, source="rest", received=2, stored=2)
    editor = project_key_client(alpha, role=ProjectRole.EDITOR, username="eve")
    viewer = project_key_client(alpha, role=ProjectRole.VIEWER, username="vic")
    # An admin's key that does not hold `admin` (it chose less) is refused too, as for the audit trail.
    admin_reader = project_key_client(alpha, role=ProjectRole.ADMIN, scopes=["read"], username="ada")
    for client in (editor, viewer, admin_reader):
        response = client.get(LEDGER)
        assert response.status_code == 403 and "detail" in response.json()
        assert "received" not in response.content.decode()


def test_a_superusers_key_reads_its_own_projects_ledger(projects):
    alpha, beta = projects
    ingestion_record(project=alpha, source="rest", received=7, stored=7)
    ingestion_record(project=beta, source="rest", received=2, stored=2)
    root = ApiKeyFactory(user__is_staff=True, user__is_superuser=True, project=beta, scopes=["read", "admin"])
    body_ = client_with_key(root).get(LEDGER).json()
    assert body_["sources"]["rest"]["received"] == 2


def test_a_superusers_session_reads_the_chosen_projects_ledger(client, projects):
    from tests.core.factories import UserFactory

    alpha, beta = projects
    ingestion_record(project=alpha, source="batch", received=7, stored=7)
    ingestion_record(project=beta, source="batch", received=2, stored=2)
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    session = client.session
    session["evalsite_project"] = "alpha"
    session.save()
    assert client.get(LEDGER).json()["sources"]["batch"]["received"] == 7
    session["evalsite_project"] = "beta"
    session.save()
    assert client.get(LEDGER).json()["sources"]["batch"]["received"] == 2


def test_a_project_admins_session_reads_its_project_only(client, projects):
    from tests.core.factories import UserFactory

    alpha, beta = projects
    ingestion_record(project=alpha, source="otlp", received=11, stored=11)
    ingestion_record(project=beta, source="otlp", received=3, stored=3)
    user = UserFactory(username="beta-admin")
    MembershipFactory(project=beta, user=user, role=ProjectRole.ADMIN)
    client.force_login(user)
    # Choosing a project one is not a member of is not possible: the session stays in beta.
    session = client.session
    session["evalsite_project"] = "alpha"
    session.save()
    assert client.get(LEDGER).json()["sources"]["otlp"]["received"] == 3


# --- compaction and /metrics ------------------------------------------------------------------------


def test_compaction_never_merges_two_projects_entries(projects):
    alpha, beta = projects
    # Within one hour (compaction's bucket), whatever the time the test runs.
    old = (timezone.now() - timedelta(days=5)).replace(minute=10, second=0, microsecond=0)
    for i in range(6):
        ingestion_record(project=alpha, source="rest", received=2, stored=1, rejected={"conflict": 1}, at=old)
        ingestion_record(project=beta, source="rest", received=1, stored=1, at=old + timedelta(minutes=i))
    window = {"since": old - timedelta(hours=1), "until": timezone.now()}
    before = {p.slug: ingestion_ledger(project=p, **window) for p in projects}
    removed = ingestion_ledger_compact(older_than=timedelta(days=2))
    assert removed == 10  # 6 + 6 entries became one per project
    assert sorted(IngestionEntry.objects.values_list("project__slug", "received")) == [("alpha", 12), ("beta", 6)]
    assert {p.slug: ingestion_ledger(project=p, **window) for p in projects} == before
    assert before["beta"]["rest"].rejected == {} and before["alpha"]["rest"].rejected == {"conflict": 6}


def test_prometheus_counters_carry_the_project(client, projects):
    alpha, beta = projects
    ingestion_record(project=alpha, source="rest", received=3, stored=2, rejected={"conflict": 1})
    ingestion_record(project=beta, source="rest", received=5, stored=5)
    ingestion_record(project=beta, source="online_evaluation", sampled=2, evaluated=2)
    text = client.get("/metrics").content.decode()
    name = "evalsite_ingestion_total"
    assert sample(text, name, source="rest", outcome="received", reason="", project="alpha") == 3
    assert sample(text, name, source="rest", outcome="rejected", reason="conflict", project="alpha") == 1
    assert sample(text, name, source="rest", outcome="received", reason="", project="beta") == 5
    assert sample(text, name, source="online_evaluation", outcome="sampled", reason="", project="beta") == 2
    assert all('project="' in line for line in text.splitlines() if line.startswith(name + "{"))
