"""Tool calls on PostgreSQL are partitioned by trace id range (traces.0016, apps.traces.partitions),
so that retention returns their disk space: a partition whose every trace has expired is dropped
whole, one that holds a trace still kept stays, tool calls whose trace id no partition covers land in
the default partition instead of failing, and a partition another transaction holds is left for the
next pass instead of making ingestion wait. Other databases have no partitions and nothing changes."""

import io
import threading
from datetime import timedelta

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from django.utils import timezone

from apps.core import retention
from apps.traces import partitions
from apps.traces.models import AgentTrace, ToolCall, TraceKey
from tests.core.factories import ProjectFactory
from tests.traces.factories import AgentTraceFactory

CALLS = [{"tool_name": "list_k8s_clusters"}, {"tool_name": "get_cluster_status"}]


def partition_of(trace: AgentTrace) -> str:
    """The table that holds `trace`'s tool calls, as PostgreSQL routed them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT tableoid::regclass::text FROM traces_toolcall WHERE trace_id = %s", [trace.pk])
        (name,) = cursor.fetchall()
    return name[0]


def table_bytes(name: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(to_regclass(%s))", [name])
        return cursor.fetchone()[0]


def old(trace: AgentTrace, days: int = 40) -> AgentTrace:
    AgentTrace.objects.filter(pk=trace.pk).update(created_at=timezone.now() - timedelta(days=days))
    return trace


def covering(trace_id: int) -> partitions.Partition:
    return next(p for p in partitions.partitions() if p.lo <= trace_id < p.hi)


def close(partition: partitions.Partition, project) -> AgentTrace:
    """A fresh trace past `partition`'s range, so the sequence has passed it: its range is closed."""
    return AgentTraceFactory(id=partition.hi + 1, project=project, tool_calls=CALLS)


@pytest.fixture
def fresh(on_postgres):
    """A new partition of 10 trace ids above every other, for a test that drops one: a dropped
    partition stays dropped for the rest of the session (DDL commits; the flush after a
    transaction=True test only empties tables), so each such test makes its own. Its traces take
    explicit ids in it (`at`). A pass also drops the empty partitions below the test's traces (in a
    test database every lower one is empty): those are put back afterwards for the tests that follow."""
    before = partitions.partitions()
    with override_settings(EVALSITE_TOOLCALL_PARTITION_TRACES=10):
        lo = before[-1].hi
        partitions.partitions_ensure(upto=lo)
        yield covering(lo)
    left = {p.name for p in partitions.partitions()}
    for p in before:
        if p.name not in left:
            assert partitions.TOOL_CALLS._attach(p.lo, p.hi) is True


def at(partition: partitions.Partition, offset: int, **fields) -> AgentTrace:
    return AgentTraceFactory(id=partition.lo + offset, tool_calls=CALLS, **fields)


# --- PostgreSQL ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_tool_calls_go_to_the_partition_of_their_trace_id(on_postgres):
    assert partitions.partitioned()
    ranges = partitions.partitions()
    assert ranges[0].lo == 0
    assert all(a.hi == b.lo for a, b in zip(ranges, ranges[1:], strict=False)), "contiguous ranges"
    trace = AgentTraceFactory(tool_calls=CALLS)
    assert partition_of(trace) == covering(trace.pk).name
    # The ORM reads and writes them as one table, lookups by id included.
    call = trace.tool_calls.first()
    assert ToolCall.objects.get(pk=call.pk).tool_name == "list_k8s_clusters"
    ToolCall.objects.filter(pk=call.pk).update(tool_name="renamed")
    assert ToolCall.objects.get(pk=call.pk).tool_name == "renamed"


@pytest.mark.django_db
def test_ensure_keeps_partitions_ready_ahead_of_the_highest_trace_id(on_postgres):
    size = 1000
    with override_settings(EVALSITE_TOOLCALL_PARTITION_TRACES=size):
        last = partitions.partitions()[-1]
        AgentTraceFactory(id=last.hi + 10)
        created = partitions.partitions_ensure()
        # Until AHEAD partitions lie beyond the highest id, each `size` trace ids wide.
        assert created == partitions.AHEAD + 1
        ranges = partitions.partitions()
        assert [(p.lo, p.hi) for p in ranges[-created:]] == [
            (last.hi + i * size, last.hi + (i + 1) * size) for i in range(created)
        ]
        assert partitions.partitions_ensure() == 0, "nothing more to make"


@pytest.mark.django_db(transaction=True)
def test_two_ensures_at_once_make_each_partition_once(on_postgres):
    """Celery beat's ensure and a retention pass's may run together: neither fails, and every range
    is made once."""
    size = 10
    with override_settings(EVALSITE_TOOLCALL_PARTITION_TRACES=size):
        last = partitions.partitions()[-1]
        AgentTraceFactory(id=last.hi + 25)
        barrier = threading.Barrier(2)
        created, errors = [], []

        def ensure():
            try:
                barrier.wait()
                created.append(partitions.partitions_ensure())
            except Exception as exc:  # noqa: BLE001 - the test reports any failure
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=ensure) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        new = [p for p in partitions.partitions() if p.lo >= last.hi]
        assert sum(created) == len(new) == 3 + partitions.AHEAD
        assert [p.lo for p in new] == [last.hi + i * size for i in range(len(new))]


@pytest.mark.django_db(transaction=True)
def test_a_tool_call_no_partition_covers_lands_in_the_default_one_and_the_next_partition_starts_above(
    on_postgres,
):
    size = 1000
    with override_settings(EVALSITE_TOOLCALL_PARTITION_TRACES=size):
        beyond = partitions.partitions()[-1].hi + 5 * size + 7
        trace = AgentTraceFactory(id=beyond, tool_calls=CALLS)
        assert partition_of(trace) == partitions.DEFAULT
        assert partitions.partitions_ensure() > 0
        first_new = next(p for p in partitions.partitions() if p.hi > beyond)
        assert first_new.lo == (beyond // size + 1) * size, "starts above what sits in the default partition"
        assert partition_of(trace) == partitions.DEFAULT
        assert trace.tool_calls.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_partition_whose_traces_all_expired_is_dropped_and_its_space_returned(fresh):
    """transaction=True: the pass commits as in production (PostgreSQL frees a dropped table's files
    at commit, and refuses to drop a table with foreign key checks still pending in the transaction)."""
    project = ProjectFactory(retention_days=30)
    expired = [old(at(fresh, i, project=project)) for i in range(3)]
    partition = fresh
    live = close(partition, project)
    assert table_bytes(partition.name) > 0
    assert partition in partitions.TOOL_CALLS.reclaimable(timezone.now())

    done = retention.retention_apply(pause_seconds=0)

    (bulk,) = [e for e in done if e.kind.startswith("tool call partitions")]
    assert bulk.project == "" and bulk.count >= 1
    assert table_bytes(partition.name) is None, "the partition's files are gone"
    assert partition.name not in {p.name for p in partitions.partitions()}
    # The traces went too, by the batches, each counted as the traces expirer counts them.
    assert next(e.count for e in done if e.project == project.slug and e.kind == "traces") == 3
    assert not AgentTrace.objects.filter(pk__in=[t.pk for t in expired]).exists()
    assert not ToolCall.objects.filter(trace_id__in=[t.pk for t in expired]).exists()
    assert list(live.tool_calls.values_list("tool_name", flat=True)) == ["list_k8s_clusters", "get_cluster_status"]
    assert not partitions.TOOL_CALLS.reclaimable(timezone.now()), "a second pass has nothing to drop"


@pytest.mark.django_db(transaction=True)
def test_a_partition_holding_a_trace_still_kept_stays_and_its_expired_traces_go_row_by_row(fresh):
    thirty = ProjectFactory(retention_days=30)
    forever = ProjectFactory(retention_days=None)
    expired = old(at(fresh, 0, project=thirty))
    kept = old(at(fresh, 5, project=forever), days=400)
    partition = fresh
    close(partition, thirty)
    assert partition not in partitions.TOOL_CALLS.reclaimable(timezone.now())

    retention.retention_apply(pause_seconds=0)

    assert partition.name in {p.name for p in partitions.partitions()}
    assert not AgentTrace.objects.filter(pk=expired.pk).exists()
    assert not ToolCall.objects.filter(trace_id=expired.pk).exists()
    assert kept.tool_calls.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_partition_not_yet_closed_by_the_sequence_stays(fresh):
    """The range the newest traces are in may still receive traces: never dropped, however old what
    it holds so far."""
    project = ProjectFactory(retention_days=30)
    trace = old(at(fresh, 3, project=project))
    assert fresh not in partitions.TOOL_CALLS.reclaimable(timezone.now())
    retention.retention_apply(pause_seconds=0)
    assert covering(trace.pk).name in {p.name for p in partitions.partitions()}
    assert not AgentTrace.objects.filter(pk=trace.pk).exists()


@pytest.mark.django_db(transaction=True)
@override_settings(EVALSITE_PARTITION_LOCK_TIMEOUT_MS=50)
def test_a_partition_another_transaction_holds_is_left_for_the_next_pass(fresh):
    """Ingestion holding the partition (an insert in progress) is never made to wait past the lock
    timeout: the drop gives up, the traces still expire row by row, the next pass drops it."""
    project = ProjectFactory(retention_days=30)
    expired = old(at(fresh, 0, project=project))
    partition = fresh
    close(partition, project)
    settings_dict = connection.settings_dict
    other = psycopg.connect(
        dbname=settings_dict["NAME"],
        user=settings_dict["USER"],
        host=settings_dict["HOST"],
        port=settings_dict["PORT"] or 5432,
        password=settings_dict["PASSWORD"] or None,
    )
    try:
        other.execute(f"LOCK TABLE {partition.name} IN ROW EXCLUSIVE MODE")
        retention.retention_apply(pause_seconds=0)
        assert partition.name in {p.name for p in partitions.partitions()}
        assert not AgentTrace.objects.filter(pk=expired.pk).exists()
    finally:
        other.rollback()
        other.close()
    # Emptied row by row, so the next pass finds nothing kept in it and drops it.
    assert partitions.TOOL_CALLS.reclaim(timezone.now()) >= 1
    assert table_bytes(partition.name) is None


@pytest.mark.django_db(transaction=True)
def test_the_dry_run_names_the_partitions_it_would_drop(fresh):
    project = ProjectFactory(retention_days=30)
    old(at(fresh, 0, project=project))
    partition = fresh
    close(partition, project)
    reclaimable = partitions.TOOL_CALLS.reclaimable(timezone.now())
    assert partition in reclaimable
    out = io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    assert f"all projects: would drop {len(reclaimable)} tool call partitions" in out.getvalue()
    assert partition.name in {p.name for p in partitions.partitions()}, "a dry run drops nothing"
    listing = io.StringIO()
    call_command("toolcall_partitions", stdout=listing)
    assert partition.name in listing.getvalue() and partitions.DEFAULT in listing.getvalue()
    with pytest.raises(CommandError, match="--upto goes with --ensure"):
        call_command("toolcall_partitions", "--upto", "5")


BEFORE = [("traces", "0015_agenttrace_ledger_units")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_tool_call_both_ways(on_postgres):
    trace = AgentTraceFactory(tool_calls=CALLS)
    ids = list(trace.tool_calls.values_list("pk", flat=True))
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        assert not partitions.partitioned()
        assert list(ToolCall.objects.filter(trace=trace).values_list("pk", flat=True)) == ids
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert partitions.partitioned()
    assert list(ToolCall.objects.filter(trace=trace).values_list("pk", flat=True)) == ids
    # The id sequence goes on from the copied rows.
    later = ToolCall.objects.create(trace=trace, seq=3, tool_name="x")
    assert later.pk > max(ids)


# --- the traces' own partitions (traces.0021) ----------------------------------------------------

BOTH = (partitions.TRACES, partitions.TOOL_CALLS)


def routed(trace: AgentTrace) -> str:
    """The partition PostgreSQL put the trace's own row in."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM traces_agenttrace WHERE id = %s", [trace.pk])
        return cursor.fetchone()[0]


@pytest.fixture
def fresh_traces(on_postgres):
    """A new range of 10 trace ids above every other, one partition of the traces and one of their
    tool calls: the traces' partitions are wider by default (settings), so the lower table gets one
    filler partition up to the common bound and the ranges stay contiguous. Dropped partitions are put
    back afterwards, as `fresh` does."""
    with override_settings(EVALSITE_TOOLCALL_PARTITION_TRACES=10, EVALSITE_TRACE_PARTITION_IDS=10):
        lo = max(table.partitions()[-1].hi for table in BOTH)
        for table in BOTH:
            last = table.partitions()[-1]
            if last.hi < lo:
                assert table._attach(last.hi, lo) is True
            table.ensure(upto=lo)
        before = {table.parent: table.partitions() for table in BOTH}
        yield next(p for p in partitions.TRACES.partitions() if p.lo == lo)
    # A trace the test made after the pass dropped the (empty, in a test database) low partitions has
    # a low id from the sequence and sits in the default one, where the partition could not return.
    AgentTrace.objects.all().delete()
    for table in BOTH:
        left = {p.name for p in table.partitions()}
        for p in before[table.parent]:
            if p.name not in left:
                assert table._attach(p.lo, p.hi) is True


@pytest.mark.django_db
def test_traces_go_to_the_partition_of_their_id_and_read_as_one_table(on_postgres):
    assert partitions.TRACES.partitioned()
    ranges = partitions.TRACES.partitions()
    assert ranges[0].lo == 0
    assert all(a.hi == b.lo for a, b in zip(ranges, ranges[1:], strict=False)), "contiguous ranges"
    trace = AgentTraceFactory(tool_calls=CALLS)
    assert routed(trace) == next(p.name for p in ranges if p.lo <= trace.pk < p.hi)
    AgentTrace.objects.filter(pk=trace.pk).update(agent_name="renamed")
    assert AgentTrace.objects.get(project=trace.project, session_id=trace.session_id).agent_name == "renamed"
    assert trace.tool_calls.count() == 2
    # The id takes its default from the table's own sequence; db_default columns keep theirs for
    # writers that leave them out (the bench's COPY).
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO traces_agenttrace (project_id, session_id, agent_name, user_query, status, start_time, "
            "tool_call_count, metadata, source, truncated, dropped, created_at, updated_at) "
            "VALUES (%s, 'sql', 'a', 'q', 'completed', now(), 0, '{}', 'batch', false, '{}', now(), now()) "
            "RETURNING id, ledger_units, unpriced_calls",
            [trace.project_id],
        )
        pk, units, unpriced = cursor.fetchone()
    assert pk > trace.pk and (units, unpriced) == (1, 0)


@pytest.mark.django_db(transaction=True)
def test_a_trace_partition_whose_traces_all_expired_and_went_is_dropped_after_the_batches(fresh_traces):
    """transaction=True: the pass commits as in production (PostgreSQL frees a dropped table's files
    at commit)."""
    project = ProjectFactory(retention_days=30)
    partition = fresh_traces
    expired = [old(at(partition, i, project=project, session_id=f"expired-{i}")) for i in range(3)]
    live = close(partition, project)
    assert routed(expired[0]) == partition.name
    assert table_bytes(partition.name) > 0
    assert partition in partitions.TRACES.reclaimable(timezone.now())

    done = retention.retention_apply(pause_seconds=0)

    (bulk,) = [e for e in done if e.kind.startswith("trace partitions")]
    assert bulk.project == "" and bulk.count >= 1
    assert done.index(bulk) > max(i for i, e in enumerate(done) if e.project), "after the batches"
    assert table_bytes(partition.name) is None, "the traces' files are gone"
    assert partition.name not in {p.name for p in partitions.TRACES.partitions()}
    # The batches deleted the traces (and counted them) before the partition went; their keys went
    # with them, so the session ids can be sent again.
    assert next(e.count for e in done if e.project == project.slug and e.kind == "traces") == 3
    assert not TraceKey.objects.filter(trace_id__in=[t.pk for t in expired]).exists()
    again = AgentTraceFactory(session_id="expired-0", project=project)
    assert routed(again) != partition.name
    assert routed(live) != partition.name and live.tool_calls.count() == 2
    assert not partitions.TRACES.reclaimable(timezone.now()), "a second pass has nothing to drop"


@pytest.mark.django_db(transaction=True)
def test_a_trace_partition_holding_a_kept_trace_or_an_expired_one_not_yet_deleted_stays(fresh_traces):
    partition = fresh_traces
    forever = ProjectFactory(retention_days=None)
    kept = old(at(partition, 5, project=forever), days=400)
    thirty = ProjectFactory(retention_days=30)
    close(partition, thirty)
    assert partition not in partitions.TRACES.reclaimable(timezone.now())
    retention.retention_apply(pause_seconds=0)
    assert partition.name in {p.name for p in partitions.TRACES.partitions()}
    assert AgentTrace.objects.get(pk=kept.pk).tool_calls.count() == 2
    # Expired but still there (the batches have not reached it): reclaimable, but the drop itself
    # asks again and keeps a partition that is not empty.
    AgentTrace.objects.filter(pk=kept.pk).update(project=thirty)
    assert partition in partitions.TRACES.reclaimable(timezone.now())
    assert partitions.TRACES._drop(partition, timezone.now()) is False
    assert AgentTrace.objects.filter(pk=kept.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_the_dry_run_and_the_listing_name_the_trace_partitions(fresh_traces):
    project = ProjectFactory(retention_days=30)
    old(at(fresh_traces, 0, project=project))
    close(fresh_traces, project)
    reclaimable = partitions.TRACES.reclaimable(timezone.now())
    assert fresh_traces in reclaimable
    out = io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    assert f"all projects: would drop {len(reclaimable)} trace partitions" in out.getvalue()
    assert fresh_traces.name in {p.name for p in partitions.TRACES.partitions()}, "a dry run drops nothing"
    listing = io.StringIO()
    call_command("partitions", stdout=listing)
    assert fresh_traces.name in listing.getvalue() and partitions.TRACES.default in listing.getvalue()


BEFORE_TRACES = [("traces", "0019_trace_cost_backfill")]


@pytest.mark.django_db(transaction=True)
def test_the_trace_migrations_keep_every_trace_and_key_both_ways(on_postgres):
    """traces.0020 and 0021 back to unique constraints on a plain table, and forward again: the rows,
    their ids and their keys are kept, the triggers are there again after each rebuild, and the
    sequence goes on."""
    project = ProjectFactory()
    traces = [AgentTraceFactory(project=project, tool_calls=CALLS) for _ in range(3)]
    otlp = AgentTraceFactory(project=project, otel_trace_id="d" * 32)

    def rows():
        return list(AgentTrace.objects.order_by("pk").values_list("pk", "session_id", "otel_trace_id", "ledger_units"))

    stored = rows()
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_TRACES)
    try:
        assert not partitions.TRACES.partitioned()
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass('traces_tracekey')")
            assert cursor.fetchone()[0] is None
            cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = 'traces_agenttrace'::regclass")
            assert {"agenttrace_unique_project_session", "agenttrace_unique_otel_trace_id_project"} <= {
                row[0] for row in cursor.fetchall()
            }
        assert rows() == stored
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert partitions.TRACES.partitioned()
    assert rows() == stored
    assert keys_of(project) == {(t.pk, t.session_id, t.otel_trace_id) for t in [*traces, otlp]}
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentTraceFactory(project=project, session_id=traces[0].session_id)
    later = AgentTraceFactory(project=project)
    assert later.pk > otlp.pk and (later.pk, later.session_id, None) in keys_of(project)
    assert traces[0].tool_calls.count() == 2


def keys_of(project) -> set[tuple]:
    return set(TraceKey.objects.filter(project=project).values_list("trace_id", "session_id", "otel_trace_id"))


# --- other databases -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_without_postgresql_there_is_nothing_to_partition():
    if connection.vendor == "postgresql":
        pytest.skip("SQLite (the embedded default) only")
    project = ProjectFactory(retention_days=30)
    old(AgentTraceFactory(project=project, tool_calls=CALLS))
    assert not partitions.partitioned()
    assert partitions.partitions_ensure() == 0
    assert partitions.TOOL_CALLS.reclaim(timezone.now()) == 0
    done = retention.retention_apply(pause_seconds=0)
    assert all(e.project for e in done), "no bulk step reported"
    assert ToolCall.objects.count() == 0
