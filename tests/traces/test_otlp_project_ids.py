"""OpenTelemetry trace and span ids are the client's, so they are unique per project, as session ids
are: the same ids sent to projects A and B make two traces, neither sees the other's, nothing is
refused (`conflict` told B that A holds the trace id) and nothing is merged across projects.

Each test sends the same spans (FakeTrace with one seed gives the same trace, root and tool span
ids) to two projects through POST /v1/traces or the ingestion service, then checks each project's
traces, span ids and ingestion ledger."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from apps.core.models import Project, ProjectRole
from apps.traces import services
from apps.traces.ledger_selectors import ingestion_ledger
from apps.traces.models import AgentTrace, OtlpSpan, ToolCall
from apps.traces.tasks import prune_otlp_spans, settle_otlp_traces
from tests.core.factories import ProjectFactory, project_key_client
from tests.traces.test_otlp_assembly import PROTOBUF, FakeTrace, body

pytestmark = pytest.mark.django_db

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


def export(api, spans) -> None:
    response = api.post("/v1/traces", body(spans), content_type=PROTOBUF)
    assert response.status_code == 200, response.content
    # No partial success: nothing refused.
    assert response.content in (b"", b"{}"), response.content


def ledger(project):
    now = timezone.now()
    return ingestion_ledger(project=project, since=now - timedelta(days=1), until=now + timedelta(seconds=1))["otlp"]


def spans_of(project) -> set[tuple[str, str]]:
    return set(OtlpSpan.objects.filter(project=project).values_list("otel_trace_id", "span_id"))


def calls_of(trace: AgentTrace) -> list[str]:
    return list(trace.tool_calls.order_by("seq").values_list("tool_name", flat=True))


def test_the_same_trace_and_span_ids_in_two_projects_are_two_traces(alpha_api, beta_api, projects):
    alpha, beta = projects
    a, b = FakeTrace(seed=70), FakeTrace(seed=70)
    a_spans, b_spans = [a.root(), *a.tools(3)], [b.root(), *b.tools(3)]
    assert [s.span_id for s in a_spans] == [s.span_id for s in b_spans]

    export(alpha_api, a_spans)
    export(beta_api, [b_spans[0], *[b.tool(f"beta_{i}", 2000 + i) for i in range(2)]])

    mine, theirs = AgentTrace.objects.get(project=alpha), AgentTrace.objects.get(project=beta)
    assert mine.otel_trace_id == theirs.otel_trace_id == a.hex
    assert calls_of(mine) == ["tool_0", "tool_1", "tool_2"]
    assert calls_of(theirs) == ["beta_0", "beta_1"]
    # Each key reads its own trace of that id, by its session id (the same: otel_<trace id>).
    assert mine.session_id == theirs.session_id
    read = [c["tool_name"] for c in alpha_api.get(f"{TRACE}/{mine.session_id}").json()["tool_calls"]]
    assert read == ["tool_0", "tool_1", "tool_2"]
    read = [c["tool_name"] for c in beta_api.get(f"{TRACE}/{theirs.session_id}").json()["tool_calls"]]
    assert read == ["beta_0", "beta_1"]
    # Nothing refused: B's ledger stores all its spans, A's never hears of B's.
    la, lb = ledger(alpha), ledger(beta)
    assert (la.received, la.stored, la.duplicate, la.rejected) == (4, 4, 0, {})
    assert (lb.received, lb.stored, lb.duplicate, lb.rejected) == (3, 3, 0, {})
    assert len(spans_of(alpha)) == 4 and len(spans_of(beta)) == 3


def test_a_span_is_a_duplicate_only_within_its_project(alpha_api, beta_api, projects):
    alpha, beta = projects
    spans = [FakeTrace(seed=71).root(), *FakeTrace(seed=71).tools(2)]
    export(alpha_api, spans)
    export(alpha_api, spans)  # a retry: duplicates
    export(beta_api, spans)  # the same spans in B: new, B's own trace
    la, lb = ledger(alpha), ledger(beta)
    assert (la.received, la.stored, la.duplicate) == (6, 3, 3)
    assert (lb.received, lb.stored, lb.duplicate) == (3, 3, 0)
    assert AgentTrace.objects.filter(project=alpha).get().tool_call_count == 2
    assert AgentTrace.objects.filter(project=beta).get().tool_call_count == 2
    assert spans_of(alpha) == spans_of(beta)
    assert ToolCall.objects.count() == 4


def test_late_spans_merge_into_their_own_projects_trace(alpha_api, beta_api, projects):
    """Both projects hold a trace of the id; a late child sent to B lands in B's trace only."""
    alpha, beta = projects
    trace = FakeTrace(seed=72)
    export(alpha_api, [trace.root()])
    export(beta_api, [trace.root()])
    export(beta_api, [trace.tool("late", 5000)])
    assert calls_of(AgentTrace.objects.get(project=beta)) == ["late"]
    assert calls_of(AgentTrace.objects.get(project=alpha)) == []


def test_waiting_spans_of_b_are_never_merged_into_as_trace(alpha_api, beta_api, projects):
    """B's children wait; A's root of the same trace id makes A's trace from A's spans only, the
    reaper leaves B's spans waiting, and B's own root then takes them."""
    alpha, beta = projects
    trace = FakeTrace(seed=73)
    export(alpha_api, trace.tools(1, first_us=100))
    export(beta_api, trace.tools(3, first_us=900))
    export(alpha_api, [trace.root()])
    settle_otlp_traces()
    mine = AgentTrace.objects.get(project=alpha)
    assert calls_of(mine) == ["tool_0"]
    assert OtlpSpan.objects.filter(project=beta, payload__isnull=False).count() == 3

    export(beta_api, [trace.root()])
    theirs = AgentTrace.objects.get(project=beta)
    assert calls_of(theirs) == ["tool_0", "tool_1", "tool_2"]
    assert not OtlpSpan.objects.filter(payload__isnull=False).exists()
    mine.refresh_from_db()
    assert mine.tool_call_count == 1
    assert ledger(alpha).balanced and ledger(beta).balanced


def test_the_waiting_cap_and_the_orphan_prune_count_per_project(alpha_api, beta_api, projects, settings):
    """A's orphans are pruned in A's ledger; B's spans of the same trace id are B's, under B's cap."""
    alpha, beta = projects
    settings.EVALSITE_OTLP_MAX_SPANS_PER_TRACE = 2
    settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS = 1
    trace = FakeTrace(seed=74)
    spans = trace.tools(3)
    export(alpha_api, spans)
    export(beta_api, spans[:2])
    assert OtlpSpan.objects.filter(project=alpha, payload__dropped="spans").count() == 1
    assert not OtlpSpan.objects.filter(project=beta, payload__dropped="spans").exists()
    OtlpSpan.objects.filter(project=alpha).update(received_at=timezone.now() - timedelta(hours=2))
    prune_otlp_spans()
    assert not OtlpSpan.objects.filter(project=alpha).exists()
    assert OtlpSpan.objects.filter(project=beta, payload__isnull=False).count() == 2
    la, lb = ledger(alpha), ledger(beta)
    assert (la.received, la.stored, la.dropped, la.balanced) == (3, 0, {"trace_cap": 1, "orphan": 2}, True)
    assert (lb.received, lb.stored, lb.dropped, lb.balanced) == (2, 2, {}, True)


def test_clearing_as_traces_leaves_bs_span_ids(alpha_api, beta_api, projects):
    alpha, beta = projects
    trace = FakeTrace(seed=75)
    spans = [trace.root(), *trace.tools(2)]
    export(alpha_api, spans)
    export(beta_api, spans)
    assert services.traces_clear(project_id=alpha.pk) == 1
    assert not spans_of(alpha) and len(spans_of(beta)) == 3
    # Sent again: A makes its trace anew, B's are duplicates.
    export(alpha_api, spans)
    export(beta_api, spans)
    assert AgentTrace.objects.get(project=alpha).tool_call_count == 2
    assert ledger(beta).duplicate == 3


def test_expiring_as_traces_leaves_bs_spans_and_ledger(projects):
    """Retention of A forgets A's span ids and counts A's waiting spans; B's spans of the same trace
    id, waiting for B's root, stay, and B's ledger is untouched."""
    from tests.traces.test_ledger_expiry import OLD_HOUR, backdate, expire, hour_totals, send

    alpha, beta = projects
    trace = FakeTrace(seed=76)
    send(alpha, [trace.root(), *trace.tools(2)])
    send(beta, trace.tools(2))
    backdate(alpha)
    backdate(beta)
    expire(alpha)
    assert not AgentTrace.objects.exists() and not spans_of(alpha)
    assert OtlpSpan.objects.filter(project=beta, payload__isnull=False).count() == 2
    assert hour_totals(alpha, "otlp", OLD_HOUR) == {"received": 3, "stored": 0, "dropped": {"expired": 3}}
    assert hour_totals(beta, "otlp", OLD_HOUR) == {"received": 2, "stored": 2, "dropped": {}}


def test_deleting_a_project_deletes_its_span_ids(projects):
    from apps.traces.models import IngestionEntry
    from tests.traces.test_ledger_expiry import send

    alpha, beta = projects
    trace = FakeTrace(seed=77)
    send(alpha, trace.tools(2))
    send(beta, trace.tools(2))
    IngestionEntry.objects.filter(project=alpha).delete()  # the ledger protects a project, span ids do not
    alpha_id = alpha.pk
    alpha.delete()
    assert not OtlpSpan.objects.filter(project_id=alpha_id).exists()
    assert len(spans_of(beta)) == 2


# --- migration traces.0017 ------------------------------------------------------------------------

BEFORE = [("traces", "0016_toolcall_partitions")]
AFTER = [("traces", "0017_otlp_ids_per_project")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_span_its_project_and_reverses():
    old = _migrate(BEFORE)
    try:
        OldProject = old.get_model("core", "Project")
        Trace, Span = old.get_model("traces", "AgentTrace"), old.get_model("traces", "OtlpSpan")
        default, _ = OldProject.objects.get_or_create(slug="default", defaults={"name": "Default"})
        alpha = OldProject.objects.create(slug="alpha", name="Alpha")
        beta = OldProject.objects.create(slug="beta", name="Beta")
        x, y, z = "a" * 32, "b" * 32, "c" * 32
        Trace.objects.create(project=alpha, session_id="t", agent_name="A", user_query="q", otel_trace_id=x)
        waiting = {"trace_id": x, "span_id": "2" * 16, "name": "t", "kind": "tool", "is_root": False}
        rows = [
            (x, "1" * 16, None),  # applied to alpha's trace
            (x, "2" * 16, {**waiting, "project": beta.pk}),  # beta's, waiting under alpha's trace id
            (x, "3" * 16, {"dropped": "spans", "count": 2, "project": beta.pk}),  # beta's cap mark
            (y, "4" * 16, {**waiting, "trace_id": y, "project": alpha.pk}),  # alpha's orphan
            (y, "5" * 16, {**waiting, "trace_id": y}),  # waiting from before projects: no key
            (z, "6" * 16, None),  # an id of no trace
            (z, "7" * 16, {**waiting, "trace_id": z, "project": 999_999}),  # a project that is gone
        ]
        for trace_id, span_id, payload in rows:
            Span.objects.create(otel_trace_id=trace_id, span_id=span_id, payload=payload)
    finally:
        _migrate(AFTER)

    got = {s: (p, payload) for p, s, payload in OtlpSpan.objects.values_list("project_id", "span_id", "payload")}
    assert {s: p for s, (p, _) in got.items()} == {
        "1" * 16: alpha.pk,
        "2" * 16: beta.pk,
        "3" * 16: beta.pk,
        "4" * 16: alpha.pk,
        "5" * 16: default.pk,
        "6" * 16: default.pk,
        "7" * 16: default.pk,
    }
    assert not any(payload and "project" in payload for _, payload in got.values())
    assert got["3" * 16][1] == {"dropped": "spans", "count": 2}

    # The same ids in another project are accepted now, and going back is refused while they are.
    OtlpSpan.objects.create(project_id=alpha.pk, otel_trace_id=x, span_id="2" * 16)
    with pytest.raises(RuntimeError, match="cannot be reversed"):
        _migrate(BEFORE)
    OtlpSpan.objects.filter(project_id=alpha.pk, span_id="2" * 16).delete()

    old = _migrate(BEFORE)
    try:
        Span = old.get_model("traces", "OtlpSpan")
        back = {s: payload for s, payload in Span.objects.values_list("span_id", "payload")}
        assert back["2" * 16]["project"] == beta.pk and back["5" * 16]["project"] == default.pk
        assert back["3" * 16] == {"dropped": "spans", "count": 2, "project": beta.pk} and back["1" * 16] is None
    finally:
        _migrate(AFTER)
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert Project.objects.filter(slug="alpha").exists()
