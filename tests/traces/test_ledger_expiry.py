"""Retention counts what it deletes in the ingestion ledger: each expired trace moves the ledger
units it holds from `stored` to `dropped: expired`, in its project's ledger, at the hour the trace
was created, in the transaction that deletes it.

A trace keeps the number of units stored for it (AgentTrace.ledger_units), maintained by the same
statements that count them as stored: REST records (a start, every change of the intent, each tool
call, a completion; a trace closed by the stale reaper has no completion), batch traces (one each),
OTLP spans (the spans stored that ended up in the trace, waiting ones included once assembled; those
a cap refused are counted as dropped, not in it). Each door is ingested, then expired, and the
project's ledger for those hours must show nothing left stored and exactly what expired as dropped,
every entry still balanced; another project's ledger and a trace that stays are untouched."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from apps.core import retention
from apps.core.models import Project
from apps.traces import services
from apps.traces.ingestion.otlp import services as otlp_services
from apps.traces.ingestion.otlp.mapping import export_records
from apps.traces.models import AgentTrace, IngestionEntry, OtlpSpan
from tests.core.factories import ProjectFactory
from tests.traces.test_otlp_assembly import FakeTrace, body

pytestmark = pytest.mark.django_db

# Old enough for a 30-day retention, on a whole hour so the hour's entries are easy to pick out.
OLD_HOUR = (timezone.now() - timedelta(days=40)).astimezone(UTC).replace(minute=0, second=0, microsecond=0)
CALL = {"tool_name": "list_k8s_clusters", "tool_args": {"datacenter": "Delhi"}, "tool_result": [{"name": "prod-01"}]}


def call(call_id: str) -> services.ToolCallInput:
    return services.ToolCallInput(call_id=call_id, **CALL)


def entries(project: Project):
    return IngestionEntry.objects.filter(project=project)


def assert_balanced(project: Project) -> None:
    for entry in entries(project):
        assert entry.received == entry.stored + entry.duplicate + entry.rejected + entry.dropped, entry.__dict__
        assert sum(entry.reasons.get("dropped", {}).values()) == entry.dropped
        assert sum(entry.reasons.get("rejected", {}).values()) == entry.rejected


def hour_totals(project: Project, source: str, hour: datetime) -> dict:
    rows = entries(project).filter(source=source, at__gte=hour, at__lt=hour + timedelta(hours=1))
    totals = {k: v or 0 for k, v in rows.aggregate(received=Sum("received"), stored=Sum("stored")).items()}
    dropped: dict[str, int] = {}
    for reasons in rows.values_list("reasons", flat=True):
        for reason, n in reasons.get("dropped", {}).items():
            dropped[reason] = dropped.get(reason, 0) + n
    return {**totals, "dropped": dropped}


def units(project: Project, source: str) -> int:
    return AgentTrace.objects.filter(project=project, source=source).aggregate(n=Sum("ledger_units"))["n"] or 0


def stored_in_ledger(project: Project, source: str) -> int:
    return entries(project).filter(source=source).aggregate(n=Sum("stored"))["n"] or 0


def backdate(project: Project) -> None:
    """What was ingested so far, traces and ledger entries, moves to OLD_HOUR (as if it arrived then)."""
    AgentTrace.objects.filter(project=project).update(created_at=OLD_HOUR + timedelta(minutes=20))
    entries(project).update(at=OLD_HOUR + timedelta(minutes=10))


def snapshot(project: Project) -> list[tuple]:
    return list(entries(project).order_by("id").values_list("id", "at", "source", "received", "stored", "reasons"))


def expire(project: Project, batch_size: int = 2) -> None:
    Project.objects.filter(pk=project.pk).update(retention_days=30)
    retention.retention_apply(project=project.slug, batch_size=batch_size, pause_seconds=0)


# --- REST: lifecycle records ---------------------------------------------------------------------


def rest_lifecycle(project_id: int) -> None:
    """s1: a start, an intent set then changed twice (3 stored, 1 identical retry), 3 tool calls
    (one alone, two in a list with a retry), a completion and its retry: 8 units. s2: a start, an
    intent, a tool call, then closed by the stale reaper (no completion record): 3 units."""
    services.trace_start(session_id="s1", user_query="q", agent_name="Agent", project_id=project_id)
    services.trace_start(session_id="s1", user_query="q", agent_name="Agent", project_id=project_id)  # duplicate
    for intent in ("list", "list", "describe", "delete"):
        services.trace_intent_record(
            session_id="s1", intent=intent, resource_type="k8s", operation=intent, project_id=project_id
        )
    services.trace_tool_call_record(session_id="s1", project_id=project_id, call_id="c1", **CALL)
    services.trace_tool_calls_record(session_id="s1", calls=[call("c1"), call("c2"), call("c3")], project_id=project_id)
    services.trace_complete(session_id="s1", final_response="done", success=True, project_id=project_id)
    services.trace_complete(session_id="s1", final_response="done", success=True, project_id=project_id)
    services.trace_start(session_id="s2", user_query="q", agent_name="Agent", project_id=project_id)
    services.trace_intent_record(
        session_id="s2", intent="list", resource_type="k8s", operation="list", project_id=project_id
    )
    services.trace_tool_call_record(session_id="s2", project_id=project_id, call_id="c1", **CALL)


def test_rest_units_are_counted_on_the_trace_as_the_ledger_counts_them():
    project = ProjectFactory()
    rest_lifecycle(project.pk)
    AgentTrace.objects.filter(session_id="s2").update(start_time=timezone.now() - timedelta(hours=2))
    assert services.trace_fail_stale(older_than=timedelta(hours=1)) == 1
    by_session = dict(AgentTrace.objects.filter(project=project).values_list("session_id", "ledger_units"))
    assert by_session == {"s1": 8, "s2": 3}
    assert stored_in_ledger(project, "rest") == 11


def test_expired_rest_traces_move_their_records_from_stored_to_dropped_expired():
    project, other = ProjectFactory(), ProjectFactory()
    rest_lifecycle(project.pk)
    rest_lifecycle(other.pk)
    AgentTrace.objects.filter(session_id="s2").update(start_time=timezone.now() - timedelta(hours=2))
    assert services.trace_fail_stale(older_than=timedelta(hours=1)) == 2
    backdate(project)
    backdate(other)
    before = hour_totals(project, "rest", OLD_HOUR)
    assert (before["received"], before["stored"], before["dropped"]) == (15, 11, {})
    # A trace that stays: started now, not expired.
    services.trace_start(session_id="kept", user_query="q", agent_name="Agent", project_id=project.pk)
    services.trace_tool_call_record(session_id="kept", project_id=project.pk, call_id="k1", **CALL)
    other_before = snapshot(other)

    expire(project)

    assert list(AgentTrace.objects.filter(project=project).values_list("session_id", "ledger_units")) == [("kept", 2)]
    after = hour_totals(project, "rest", OLD_HOUR)
    assert after == {"received": 15, "stored": 0, "dropped": {"expired": 11}}
    now = timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    assert hour_totals(project, "rest", now) == {"received": 2, "stored": 2, "dropped": {}}
    assert stored_in_ledger(project, "rest") == units(project, "rest") == 2
    assert_balanced(project)
    assert snapshot(other) == other_before
    assert AgentTrace.objects.filter(project=other).count() == 2


# --- batch: traces ------------------------------------------------------------------------------


def batch_item(session_id: str, calls: int = 2) -> services.BatchTrace:
    return services.BatchTrace(
        session_id=session_id,
        user_query="q",
        agent_name="Agent",
        final_response="done",
        success=True,
        tool_calls=[call(f"{session_id}-{i}") for i in range(calls)],
        canonical={"session_id": session_id, "calls": calls},
    )


def test_expired_batch_traces_count_one_each():
    project, other = ProjectFactory(), ProjectFactory()
    items = [(i, batch_item(f"b{i}", calls=i)) for i in range(3)]
    services.traces_ingest_batch(items=items, project_id=project.pk)
    services.traces_ingest_batch(items=items[:1], project_id=project.pk)  # a retry: a duplicate
    services.traces_ingest_batch(items=items, project_id=other.pk)
    assert set(AgentTrace.objects.filter(project=project).values_list("ledger_units", flat=True)) == {1}
    backdate(project)
    backdate(other)
    services.traces_ingest_batch(items=[(0, batch_item("kept"))], project_id=project.pk)
    other_before = snapshot(other)

    expire(project)

    assert list(AgentTrace.objects.filter(project=project).values_list("session_id", flat=True)) == ["kept"]
    assert hour_totals(project, "batch", OLD_HOUR) == {"received": 4, "stored": 0, "dropped": {"expired": 3}}
    assert stored_in_ledger(project, "batch") == units(project, "batch") == 1
    assert_balanced(project)
    assert snapshot(other) == other_before


# --- OTLP: spans --------------------------------------------------------------------------------


def send(project: Project, spans) -> None:
    records, _refused, _reason = export_records(ExportTraceServiceRequest.FromString(body(spans)))
    otlp_services.otlp_spans_ingest(records=records, project_id=project.pk)


def otlp_late(project: Project, seed: int) -> dict[str, int]:
    """3 children wait, the root comes with one more (2 waiting assembled in its transaction, the
    third merged after it by the settle: a chunk is 2), then two late children, one of them sent
    twice (a duplicate): 7 spans in the trace."""
    late = FakeTrace(seed=seed)
    send(project, late.tools(3))
    send(project, [late.root(), late.tool("with_root", 50_000)])
    send(project, [late.tool("late", 60_000)])
    late_again = late.tool("late_again", 70_000)
    send(project, [late_again])
    send(project, [late_again])
    return {late.hex: 7}


def otlp_capped(project: Project, seed: int, settings) -> dict[str, int]:
    """- capped: a root and 4 tool spans over a cap of 2 tool calls: 3 (2 dropped as they come);
    - capped_waiting: 3 children wait, the root comes with an earlier one, over the cap of 2: 3 (the
      two latest waiting ones dropped at assembly and by the settle, moved by corrections);
    - over_waiting: 5 children over the waiting cap of 3 (2 dropped as they come), then the root: 4."""
    capped, capped_waiting, over_waiting = (FakeTrace(seed=seed + i) for i in range(1, 4))
    settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = 2
    send(project, [capped.root(), *capped.tools(4)])
    send(project, capped_waiting.tools(3, first_us=1000))
    send(project, [capped_waiting.root(), capped_waiting.tool("with_root", 500)])
    settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = 100
    settings.EVALSITE_OTLP_MAX_SPANS_PER_TRACE = 3
    send(project, over_waiting.tools(5))
    send(project, [over_waiting.root()])
    settings.EVALSITE_OTLP_MAX_SPANS_PER_TRACE = 1000
    return {capped.hex: 3, capped_waiting.hex: 3, over_waiting.hex: 4}


def test_expired_otlp_traces_move_their_spans_from_stored_to_dropped_expired(settings):
    settings.EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS = 2
    project, other = ProjectFactory(), ProjectFactory()
    expected = {**otlp_late(project, seed=100), **otlp_capped(project, seed=100, settings=settings)}
    other_expected = otlp_late(other, seed=200)
    assert not OtlpSpan.objects.filter(payload__isnull=False).exclude(payload__has_key="dropped").exists()
    held = dict(AgentTrace.objects.filter(project=project).values_list("otel_trace_id", "ledger_units"))
    assert held == expected
    # Nothing waits: every span the ledger counts as stored is in a trace.
    assert stored_in_ledger(project, "otlp") == units(project, "otlp") == 17
    backdate(project)
    backdate(other)
    before = hour_totals(project, "otlp", OLD_HOUR)
    assert (before["received"], before["stored"], before["dropped"]) == (24, 17, {"trace_cap": 6})
    kept = FakeTrace(seed=300)
    send(project, [kept.root(), *kept.tools(2)])
    other_before = snapshot(other)

    expire(project)

    assert list(AgentTrace.objects.filter(project=project).values_list("otel_trace_id", "ledger_units")) == [
        (kept.hex, 3)
    ]
    assert hour_totals(project, "otlp", OLD_HOUR) == {
        "received": 24,
        "stored": 0,
        "dropped": {"trace_cap": 6, "expired": 17},
    }
    assert stored_in_ledger(project, "otlp") == units(project, "otlp") == 3
    assert_balanced(project)
    assert snapshot(other) == other_before
    assert dict(AgentTrace.objects.filter(project=other).values_list("otel_trace_id", "ledger_units")) == other_expected


def test_spans_still_waiting_when_their_trace_expires_are_counted_in_their_senders_ledger(settings, monkeypatch):
    """A trace whose children were not all merged yet (the settle after the root's export did not
    run): the span ids go with the trace, and each waiting span is counted as expired at its
    arrival; nothing is left stored for them. Another project's spans of the same trace id are its
    own (they wait for its root): they stay, and its ledger is untouched."""
    settings.EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS = 1
    project, other = ProjectFactory(), ProjectFactory()
    trace = FakeTrace(seed=400)
    send(other, trace.tools(2, first_us=500))  # waits in `other`
    backdate(other)
    send(project, trace.tools(2))
    monkeypatch.setattr(otlp_services, "_settle", lambda trace_ids, project_id=None: [])
    send(project, [trace.root()])
    stored = AgentTrace.objects.get()
    assert (stored.project_id, stored.ledger_units, stored.tool_call_count) == (project.pk, 2, 1)
    assert OtlpSpan.objects.filter(payload__isnull=False).count() == 3
    backdate(project)
    OtlpSpan.objects.update(received_at=OLD_HOUR + timedelta(minutes=10))
    other_before = snapshot(other)

    expire(project)

    assert not AgentTrace.objects.exists() and not OtlpSpan.objects.filter(project=project).exists()
    assert OtlpSpan.objects.filter(project=other, payload__isnull=False).count() == 2
    # The trace's 2 units at its creation, its waiting child at its arrival: 3 spans stored, 3 expired.
    assert hour_totals(project, "otlp", OLD_HOUR) == {"received": 3, "stored": 0, "dropped": {"expired": 3}}
    assert hour_totals(other, "otlp", OLD_HOUR) == {"received": 2, "stored": 2, "dropped": {}}
    assert snapshot(other) == other_before
    assert_balanced(project)
    assert_balanced(other)


# --- where and when ------------------------------------------------------------------------------


def test_each_trace_is_counted_at_the_hour_it_was_created():
    """Two traces created in two hours: each hour's entry takes its own trace's units."""
    project = ProjectFactory()
    services.trace_start(session_id="a", user_query="q", agent_name="Agent", project_id=project.pk)
    services.trace_tool_call_record(session_id="a", project_id=project.pk, call_id="c1", **CALL)
    services.trace_start(session_id="b", user_query="q", agent_name="Agent", project_id=project.pk)
    AgentTrace.objects.filter(session_id="a").update(created_at=OLD_HOUR + timedelta(minutes=5))
    AgentTrace.objects.filter(session_id="b").update(created_at=OLD_HOUR + timedelta(hours=3, minutes=59))
    entries(project).delete()  # only the expiry's own entries are left to read

    assert services.traces_expire(project, timezone.now() - timedelta(days=30), 10) == 2

    got = sorted(entries(project).values_list("at", "source", "received", "stored", "dropped", "reasons"))
    assert got == [
        (OLD_HOUR, "rest", 0, -2, 2, {"dropped": {"expired": 2}}),
        (OLD_HOUR + timedelta(hours=3), "rest", 0, -1, 1, {"dropped": {"expired": 1}}),
    ]


def test_an_expiry_rolled_back_counts_nothing(monkeypatch):
    """The entries are written in the deleting transaction: a delete that fails leaves the ledger as it was."""
    project = ProjectFactory()
    services.trace_start(session_id="a", user_query="q", agent_name="Agent", project_id=project.pk)
    AgentTrace.objects.update(created_at=OLD_HOUR)
    before = snapshot(project)

    def broken(trace_ids, otel_ids, project_id):
        raise RuntimeError("disk full")

    monkeypatch.setattr(services, "_rows_forget", broken)
    with pytest.raises(RuntimeError):
        services.traces_expire(project, timezone.now() - timedelta(days=30), 10)
    assert snapshot(project) == before
    assert AgentTrace.objects.filter(project=project).count() == 1


# --- traces stored before the count ---------------------------------------------------------------

BEFORE_UNITS = [("traces", "0014_ingestionentry_project_required")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_estimates_the_units_of_traces_stored_before():
    """traces.0015: batch 1; REST 1 + intent set + tool calls + completed (not by the stale reaper);
    OTLP 1 + tool calls."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_UNITS)
    try:
        Trace = executor.loader.project_state(BEFORE_UNITS).apps.get_model("traces", "AgentTrace")
        project_id = Project.objects.default().pk

        def make(session_id, **fields):
            Trace.objects.create(project_id=project_id, session_id=session_id, user_query="q", agent_name="A", **fields)

        make("batch", source="batch", status="completed", tool_call_count=4, intent_detected="x")
        make("rest-full", source="rest", status="completed", tool_call_count=3, intent_detected="x")
        make("rest-active", source="rest", status="active", tool_call_count=2)
        make("rest-failed", source="rest", status="failed", error="boom")
        make("rest-reaped", source="rest", status="failed", error="Abandoned: no completion within 3600 s of the start")
        make("otlp", source="otlp", status="completed", tool_call_count=5, otel_trace_id="a" * 32)
        make("otlp-bare", source="otlp", status="completed", otel_trace_id="b" * 32)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert dict(AgentTrace.objects.values_list("session_id", "ledger_units")) == {
        "batch": 1,
        "rest-full": 6,
        "rest-active": 3,
        "rest-failed": 2,
        "rest-reaped": 1,
        "otlp": 6,
        "otlp-bare": 1,
    }
