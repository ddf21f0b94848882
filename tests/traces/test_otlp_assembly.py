"""OTLP assembly that cannot be lost, late spans placed without rewriting the trace, per-trace caps,
and the ingestion ledger's accounting of every span (apps.traces.ingestion.otlp.services).

Spans are built as protobuf by hand (ids and start times under the test's control) and posted to
POST /v1/traces as an exporter does; the attacks on storage run on PostgreSQL."""

import os
import random
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.db import OperationalError, connection, connections
from django.db.models import Sum
from django.test import Client
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from apps.core.services import api_key_create
from apps.traces.ingestion.otlp import services as otlp_services
from apps.traces.models import AgentTrace, IngestionEntry, OtlpSpan, ToolCall
from apps.traces.tasks import prune_otlp_spans, settle_otlp_traces

PROTOBUF = "application/x-protobuf"
ROOT = Path(__file__).resolve().parents[2]
BASE_NS = 1_767_866_400_000_000_000  # 2026-01-08 10:00 UTC


def _attr(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


class FakeTrace:
    """One agent trace as spans: a root and tool spans, ids and start times chosen by the test."""

    def __init__(self, seed: int = 0):
        rng = random.Random(seed)
        self.trace_id = rng.randbytes(16)
        self.root_id = rng.randbytes(8)
        self._rng = rng

    @property
    def hex(self) -> str:
        return self.trace_id.hex()

    def root(self, **attributes) -> Span:
        attrs = [
            _attr("gen_ai.operation.name", "invoke_agent"),
            _attr("gen_ai.agent.name", "Agent"),
            *(_attr(k, v) for k, v in attributes.items()),
        ]
        return Span(
            trace_id=self.trace_id,
            span_id=self.root_id,
            name="invoke_agent",
            start_time_unix_nano=BASE_NS,
            end_time_unix_nano=BASE_NS + 10**12,
            attributes=attrs,
        )

    def tool(self, name: str, start_us: int, **attributes) -> Span:
        start = BASE_NS + start_us * 1000
        attrs = [
            _attr("gen_ai.operation.name", "execute_tool"),
            _attr("gen_ai.tool.name", name),
            *(_attr(k, v) for k, v in attributes.items()),
        ]
        return Span(
            trace_id=self.trace_id,
            span_id=self._rng.randbytes(8),
            parent_span_id=self.root_id,
            name=f"execute_tool {name}",
            start_time_unix_nano=start,
            end_time_unix_nano=start + 500,
            attributes=attrs,
        )

    def tools(self, n: int, *, every_us: int = 1000, first_us: int = 1000) -> list[Span]:
        return [self.tool(f"tool_{i}", first_us + i * every_us) for i in range(n)]


def body(spans: list[Span]) -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_attr("service.name", "assembly-test"))
    resource_spans.scope_spans.add().spans.extend(spans)
    return request.SerializeToString()


def _client(raw_key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw_key}")


@pytest.fixture
def raw_key(db) -> str:
    _key, raw = api_key_create(username="otel-assembly", staff=False, scopes=["ingest", "read"])
    return raw


@pytest.fixture
def exporter(raw_key):
    client = _client(raw_key)

    def post(payload: bytes) -> int:
        return client.post("/v1/traces", payload, content_type=PROTOBUF).status_code

    return post


def _tool_names(trace: AgentTrace) -> list[str]:
    return list(trace.tool_calls.order_by("seq").values_list("tool_name", flat=True))


def ledger_totals() -> dict:
    totals = IngestionEntry.objects.filter(source="otlp").aggregate(
        received=Sum("received"),
        stored=Sum("stored"),
        duplicate=Sum("duplicate"),
        rejected=Sum("rejected"),
        dropped=Sum("dropped"),
    )
    return {k: v or 0 for k, v in totals.items()}


def assert_ledger_balances() -> dict:
    """Every entry keeps received = stored + duplicate + rejected + dropped, so their sum does too;
    the reasons add up to the totals."""
    for entry in IngestionEntry.objects.filter(source="otlp"):
        assert entry.received == entry.stored + entry.duplicate + entry.rejected + entry.dropped, entry.__dict__
        assert sum(entry.reasons.get("dropped", {}).values()) == entry.dropped
        assert sum(entry.reasons.get("rejected", {}).values()) == entry.rejected
    totals = ledger_totals()
    assert totals["received"] == totals["stored"] + totals["duplicate"] + totals["rejected"] + totals["dropped"]
    return totals


def dropped_reasons() -> dict:
    out: dict = {}
    for reasons in IngestionEntry.objects.filter(source="otlp").values_list("reasons", flat=True):
        for reason, n in reasons.get("dropped", {}).items():
            out[reason] = out.get(reason, 0) + n
    return out


# --- 1. assembly that cannot be lost ---------------------------------------------------------------


def _interrupt_root_export(monkeypatch, raw_key, children_body: bytes) -> None:
    """The race the audit ran: while the root's export is storing its trace, another export stores
    the trace's children (it sees no trace yet, so they wait); the root's export commits and is then
    interrupted before its assembly step (a lock wait ending in 503)."""
    real_insert = otlp_services.insert_traces

    def insert_then_children_arrive(new_traces, **kwargs):
        real_insert(new_traces, **kwargs)

        def children_export():
            try:
                results.append(_client(raw_key).post("/v1/traces", children_body, content_type=PROTOBUF).status_code)
            finally:
                connections.close_all()

        other = threading.Thread(target=children_export)
        other.start()
        other.join(30)

    real_settle = otlp_services._settle

    def interrupted(trace_ids, project_id=None):
        # The children's export settles too, but sees no trace (not committed yet): it goes through.
        if AgentTrace.objects.filter(otel_trace_id__in=list(trace_ids)).exists():
            raise OperationalError("canceling statement due to lock timeout")
        return real_settle(trace_ids, project_id)

    results: list[int] = []
    monkeypatch.setattr(otlp_services, "insert_traces", insert_then_children_arrive)
    monkeypatch.setattr(otlp_services, "_settle", interrupted)
    return results


def test_retry_of_an_interrupted_root_export_assembles_every_tool_call(
    on_postgres, transactional_db, raw_key, monkeypatch
):
    trace = FakeTrace(seed=1)
    root_body, children_body = body([trace.root()]), body(trace.tools(5))
    with monkeypatch.context() as patch:
        children_status = _interrupt_root_export(patch, raw_key, children_body)
        assert _client(raw_key).post("/v1/traces", root_body, content_type=PROTOBUF).status_code == 503
    assert children_status == [200]
    stored = AgentTrace.objects.get(otel_trace_id=trace.hex)
    # What the audit found: a completed trace with none of its calls, its children waiting.
    assert stored.status == "completed" and stored.tool_calls.count() == 0
    assert OtlpSpan.objects.filter(payload__isnull=False).count() == 5

    # The exporter retries the same bytes: every span is a duplicate, and the trace is repaired.
    assert _client(raw_key).post("/v1/traces", root_body, content_type=PROTOBUF).status_code == 200
    assert _tool_names(stored) == [f"tool_{i}" for i in range(5)]
    stored.refresh_from_db()
    assert stored.tool_call_count == 5 and not stored.truncated
    assert not OtlpSpan.objects.filter(payload__isnull=False).exists()
    totals = assert_ledger_balances()
    # 1 root + 5 children + 1 re-sent root: six spans kept, one duplicate, nothing lost.
    assert totals == {"received": 7, "stored": 6, "duplicate": 1, "rejected": 0, "dropped": 0}
    assert totals["stored"] == OtlpSpan.objects.count()


def test_a_later_export_of_the_trace_repairs_it_too(on_postgres, transactional_db, raw_key, monkeypatch):
    trace = FakeTrace(seed=2)
    with monkeypatch.context() as patch:
        _interrupt_root_export(patch, raw_key, body(trace.tools(5)))
        assert _client(raw_key).post("/v1/traces", body([trace.root()]), content_type=PROTOBUF).status_code == 503
    # Not a retry: a late tool span of the same trace, started after the others.
    late = trace.tool("late", 10_000_000)
    assert _client(raw_key).post("/v1/traces", body([late]), content_type=PROTOBUF).status_code == 200
    assert _tool_names(AgentTrace.objects.get()) == [*(f"tool_{i}" for i in range(5)), "late"]


def test_the_reaper_repairs_without_any_retry(on_postgres, transactional_db, raw_key, monkeypatch):
    trace = FakeTrace(seed=3)
    with monkeypatch.context() as patch:
        _interrupt_root_export(patch, raw_key, body(trace.tools(5)))
        assert _client(raw_key).post("/v1/traces", body([trace.root()]), content_type=PROTOBUF).status_code == 503
    assert AgentTrace.objects.get().tool_calls.count() == 0
    assert settle_otlp_traces() == 1
    assert _tool_names(AgentTrace.objects.get()) == [f"tool_{i}" for i in range(5)]
    assert settle_otlp_traces() == 0  # nothing left waiting
    assert_ledger_balances()


def test_the_prune_settles_before_it_deletes(db, settings, exporter):
    """Children of a trace whose root came are merged by the prune's own settle, never pruned; only
    spans whose root never came are dropped, and the ledger says so at their arrival hour."""
    settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS = 1
    kept, orphan = FakeTrace(seed=4), FakeTrace(seed=5)
    assert exporter(body([kept.root()])) == 200
    assert exporter(body(orphan.tools(3))) == 200
    # Children stored waiting by a request that did not see the trace, and never settled since.
    hours_ago = timezone.now() - timedelta(hours=30)
    for span in kept.tools(2):
        record = otlp_services.SpanRecord(
            trace_id=kept.hex,
            span_id=span.span_id.hex(),
            parent_id=kept.root_id.hex(),
            name=span.name,
            kind="tool",
            is_root=False,
            start_ns=span.start_time_unix_nano,
            end_ns=span.end_time_unix_nano,
            tool_name=span.name.split()[-1],
        )
        OtlpSpan.objects.create(
            otel_trace_id=kept.hex, span_id=record.span_id, payload=record.to_payload(), received_at=hours_ago
        )
        otlp_services.ingestion_record(project=None, source="otlp", received=1, stored=1, at=hours_ago)
    OtlpSpan.objects.filter(otel_trace_id=orphan.hex).update(received_at=hours_ago)

    assert prune_otlp_spans() == 2 + 3  # kept's 2 children (merged first) and the orphan's 3
    assert _tool_names(AgentTrace.objects.get()) == ["tool_0", "tool_1"]
    assert list(OtlpSpan.objects.values_list("span_id", flat=True)) == [kept.root_id.hex()]
    totals = assert_ledger_balances()
    assert dropped_reasons() == {"orphan": 3}
    assert totals["stored"] == 3  # the root and the two children merged into it
    correction = IngestionEntry.objects.get(reasons__dropped__orphan=3)
    assert (correction.received, correction.stored, correction.at) == (
        0,
        -3,
        hours_ago.replace(minute=0, second=0, microsecond=0),
    )


_GUNICORN_CONFIG = '''
import os
import pathlib

import httpx

workers = 2
timeout = 60


def post_worker_init(worker):
    """The first root export: while its trace is being stored, the trace's children arrive on the
    other worker; after the commit, this worker dies before assembling anything."""
    from apps.traces.models import AgentTrace
    from apps.traces.ingestion.otlp import services

    children_sent = pathlib.Path(os.environ["TEST_CHILDREN_SENT"])
    killed = pathlib.Path(os.environ["TEST_KILLED"])
    real_insert, real_settle = services.insert_traces, services._settle

    def insert_traces(new_traces, **kwargs):
        real_insert(new_traces, **kwargs)
        if not children_sent.exists():
            children_sent.touch()
            response = httpx.post(os.environ["TEST_URL"] + "/v1/traces",
                                  content=pathlib.Path(os.environ["TEST_CHILDREN_BODY"]).read_bytes(),
                                  headers={"Content-Type": "application/x-protobuf",
                                           "Authorization": "Bearer " + os.environ["TEST_KEY"]}, timeout=30)
            assert response.status_code == 200, response.text

    def settle(trace_ids, project_id=None):
        if not killed.exists() and AgentTrace.objects.filter(otel_trace_id__in=list(trace_ids)).exists():
            killed.touch()
            os._exit(1)
        return real_settle(trace_ids, project_id)

    services.insert_traces = insert_traces
    services._settle = settle
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_web_worker_killed_between_commit_and_assembly_loses_nothing(
    on_postgres, transactional_db, raw_key, tmp_path
):
    """A real gunicorn worker process dies (os._exit) right after the root's commit; the master
    starts another; the exporter's retry of the same bytes yields every tool call."""
    trace = FakeTrace(seed=6)
    root_body, children_body = body([trace.root()]), body(trace.tools(5))
    (tmp_path / "children.bin").write_bytes(children_body)
    (tmp_path / "gunicorn.conf.py").write_text(_GUNICORN_CONFIG)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
        "SECRET_KEY": "assembly-test-secret-key-not-for-production",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "TEST_CHILDREN_SENT": str(tmp_path / "children-sent"),
        "TEST_KILLED": str(tmp_path / "killed"),
        "TEST_CHILDREN_BODY": str(tmp_path / "children.bin"),
        "TEST_URL": url,
        "TEST_KEY": raw_key,
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "evalsite.wsgi",
            "-c",
            str(tmp_path / "gunicorn.conf.py"),
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    headers = {"Content-Type": PROTOBUF, "Authorization": f"Bearer {raw_key}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.3)
        with pytest.raises(httpx.HTTPError):  # the worker died holding the connection
            httpx.post(f"{url}/v1/traces", content=root_body, headers=headers, timeout=30)
        assert (tmp_path / "killed").exists()
        stored = AgentTrace.objects.get(otel_trace_id=trace.hex)
        assert stored.tool_calls.count() == 0  # committed, not assembled: the loss the audit found

        # The exporter retries (the master has started a new worker by then).
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.post(f"{url}/v1/traces", content=root_body, headers=headers, timeout=30)
                if response.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the retry never succeeded"
            time.sleep(0.3)
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
    assert _tool_names(stored) == [f"tool_{i}" for i in range(5)]
    totals = assert_ledger_balances()
    assert totals == {"received": 7, "stored": 6, "duplicate": 1, "rejected": 0, "dropped": 0}
    assert totals["stored"] == OtlpSpan.objects.count()


# --- 2. late spans placed without rewriting the trace ----------------------------------------------


def _table_writes(table: str) -> tuple[int, int]:
    """Rows inserted and updated in `table` by the current transaction (PostgreSQL statistics, kept
    per partition: summed over the table's partition tree)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0) FROM pg_stat_xact_user_tables "
            "WHERE relid = %s::regclass OR relid IN (SELECT relid FROM pg_partition_tree(%s))",
            [table, table],
        )
        return tuple(cursor.fetchone())


def test_a_late_earlier_span_on_a_big_trace_moves_no_other_call(on_postgres, db, exporter):
    trace = FakeTrace(seed=7)
    n = 3000
    assert exporter(body([trace.root(), *trace.tools(n)])) == 200
    stored = AgentTrace.objects.get()
    assert stored.tool_calls.count() == n
    # 171 bytes that start between the 1500th and 1501st calls.
    late = trace.tool("late", 1000 + 1499 * 1000 + 500)
    assert len(body([late])) < 200
    inserted_before, updated_before = _table_writes(ToolCall._meta.db_table)
    assert exporter(body([late])) == 200
    inserted_after, updated_after = _table_writes(ToolCall._meta.db_table)
    assert (inserted_after - inserted_before, updated_after - updated_before) == (1, 0)
    names = _tool_names(stored)
    assert names[1499:1502] == ["tool_1499", "late", "tool_1500"] and len(names) == n + 1
    stored.refresh_from_db()
    assert stored.tool_call_count == n + 1


def test_late_spans_that_use_up_a_gap_renumber_in_order(db, exporter):
    """The rare path: many late calls squeezed between the same two neighbours exhaust the gap; the
    trace is renumbered once and every call keeps its place."""
    trace = FakeTrace(seed=8)
    assert exporter(body([trace.root(), trace.tool("first", 1000), trace.tool("last", 2000)])) == 200
    # Each one starts before the previous one, right after "first": always the same gap, halved.
    for i in range(24):
        assert exporter(body([trace.tool(f"late_{i}", 1999 - i)])) == 200
    assert _tool_names(AgentTrace.objects.get()) == ["first", *(f"late_{i}" for i in reversed(range(24))), "last"]
    seqs = list(ToolCall.objects.order_by("seq").values_list("seq", flat=True))
    assert len(set(seqs)) == len(seqs) == 26


def test_late_spans_in_one_export_share_a_gap_and_appends_leave_the_rest_alone(db, exporter):
    trace = FakeTrace(seed=9)
    assert exporter(body([trace.root(), *trace.tools(4)])) == 200
    before = dict(ToolCall.objects.values_list("tool_name", "seq"))
    assert exporter(body([trace.tool("a", 1500), trace.tool("b", 1600), trace.tool("z", 90_000)])) == 200
    assert _tool_names(AgentTrace.objects.get()) == ["tool_0", "a", "b", "tool_1", "tool_2", "tool_3", "z"]
    assert {name: seq for name, seq in ToolCall.objects.values_list("tool_name", "seq") if name in before} == before


# --- 3. per-trace caps ----------------------------------------------------------------------------


def test_tool_calls_beyond_the_cap_are_dropped_and_counted(db, settings, exporter):
    settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = 5
    trace = FakeTrace(seed=10)
    assert exporter(body([trace.root(), *trace.tools(8)])) == 200
    stored = AgentTrace.objects.get()
    assert _tool_names(stored) == [f"tool_{i}" for i in range(5)]  # the beginning of the trace is kept
    assert (stored.truncated, stored.dropped) == (True, {"tool_calls": 3})
    assert exporter(body([trace.tool("late", 500)])) == 200
    stored.refresh_from_db()
    assert stored.tool_call_count == 5 and stored.dropped == {"tool_calls": 4}
    totals = assert_ledger_balances()
    assert (totals["received"], totals["stored"], totals["dropped"]) == (10, 6, 4)
    assert dropped_reasons() == {"trace_cap": 4}


def test_a_root_after_many_waiting_children_is_assembled_in_chunks_up_to_the_cap(db, settings, exporter):
    """The 60K-children attack, scaled down: children wait beyond the waiting cap, the root comes,
    the children are claimed a chunk at a time, and the trace stops at its tool call cap."""
    settings.EVALSITE_OTLP_MAX_SPANS_PER_TRACE = 40
    settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = 30
    settings.EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS = 7
    trace = FakeTrace(seed=11)
    children = trace.tools(55)
    random.Random(0).shuffle(children)
    for start in range(0, 55, 10):
        assert exporter(body(children[start : start + 10])) == 200
    # Beyond the waiting cap only ids are kept (re-sends stay duplicates).
    marks = OtlpSpan.objects.filter(payload__dropped="spans").values_list("payload__count", flat=True)
    assert sum(marks) == 15 and OtlpSpan.objects.filter(payload__isnull=False).count() == 40 + len(marks)
    assert exporter(body([trace.root()])) == 200
    stored = AgentTrace.objects.get()
    names = _tool_names(stored)
    assert len(names) == 30 and stored.tool_call_count == 30
    starts = [int(name.split("_")[1]) for name in names]
    assert starts == sorted(starts)  # in start order whatever order they were claimed in
    assert stored.truncated and stored.dropped == {"spans": 15, "tool_calls": 10}
    assert not OtlpSpan.objects.filter(payload__isnull=False).exists()
    totals = assert_ledger_balances()
    # 55 children + root received; 15 dropped waiting, 10 more at assembly (moved from stored).
    assert totals == {"received": 56, "stored": 31, "duplicate": 0, "rejected": 0, "dropped": 25}
    assert dropped_reasons() == {"trace_cap": 25}


def test_waiting_tool_calls_dropped_at_assembly_are_corrected_at_their_arrival(db, settings, exporter):
    settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = 2
    trace = FakeTrace(seed=12)
    assert exporter(body(trace.tools(4))) == 200
    arrived = timezone.now() - timedelta(days=2)
    OtlpSpan.objects.update(received_at=arrived)
    IngestionEntry.objects.update(at=arrived)
    assert exporter(body([trace.root()])) == 200
    assert AgentTrace.objects.get().dropped == {"tool_calls": 2}
    correction = IngestionEntry.objects.get(stored__lt=0)
    assert (correction.received, correction.stored, correction.reasons) == (0, -2, {"dropped": {"trace_cap": 2}})
    assert correction.at == arrived.replace(minute=0, second=0, microsecond=0)
    # The day the children arrived balances on its own: 4 received, 2 stored, 2 dropped.
    day = IngestionEntry.objects.filter(at__date=arrived.date()).aggregate(
        r=Sum("received"), s=Sum("stored"), d=Sum("dropped")
    )
    assert day == {"r": 4, "s": 2, "d": 2}


def test_unmapped_attributes_beyond_the_budget_are_counted_in_bytes(db, settings, exporter):
    settings.EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES = 300
    trace = FakeTrace(seed=13)
    spans = [trace.root(), *(trace.tool(f"t{i}", 1000 + i, **{"custom.note": "x" * 100}) for i in range(5))]
    assert exporter(body(spans)) == 200
    stored = AgentTrace.objects.get()
    assert stored.truncated and stored.dropped["attribute_bytes"] > 0
    kept = len(stored.metadata["otel"]["spans"])
    assert 1 <= kept < 5 and stored.metadata["otel"]["spans_dropped"] == 5 - kept
    assert stored.tool_call_count == 5  # the calls themselves are all there
    assert dropped_reasons() == {}  # no span was lost, only attributes beyond the budget


# --- 4. the ledger ----------------------------------------------------------------------------------


def test_rejected_spans_alone_are_recorded(db):
    otlp_services.otlp_spans_ingest(records=[], rejected={"too_deep": 2, "nul_character": 0})
    entry = IngestionEntry.objects.get()
    assert (entry.source, entry.received, entry.rejected, entry.reasons) == (
        "otlp",
        2,
        2,
        {"rejected": {"too_deep": 2}},
    )


def test_rejected_spans_join_the_request_entry(db):
    trace = FakeTrace(seed=14)
    request = ExportTraceServiceRequest.FromString(body([trace.root(), trace.tool("a", 1)]))
    from apps.traces.ingestion.otlp.mapping import export_records

    records, _refused, _reason = export_records(request)
    otlp_services.otlp_spans_ingest(records=records, rejected={"integer_out_of_range": 1})
    otlp_services.otlp_spans_ingest(records=records)
    totals = assert_ledger_balances()
    assert totals == {"received": 5, "stored": 2, "duplicate": 2, "rejected": 1, "dropped": 0}


def test_concurrent_overlapping_exports_account_for_every_span(on_postgres, transactional_db, raw_key, settings):
    """Eight exporters send the same twenty traces, each cut into batches of its own and in its own
    order (duplicates, children before and after their roots, at the same moment). Every trace ends
    whole, and the ledger's sums say exactly what was received, kept and duplicated."""
    settings.EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS = 3
    settings.EVALSITE_OTLP_MAX_IN_FLIGHT = 8  # one process serves all eight exporters here
    traces = [FakeTrace(seed=100 + i) for i in range(20)]
    spans = [s for t in traces for s in (t.root(), *t.tools(6))]
    bodies_per_thread = []
    for thread in range(8):
        rng = random.Random(thread)
        mine = list(spans)
        rng.shuffle(mine)
        size = rng.randint(5, 25)
        bodies_per_thread.append([body(mine[i : i + size]) for i in range(0, len(mine), size)])
    failures: list = []
    retried: list = []  # 503 (a lock wait past its bound) and 429 are answers an exporter retries
    barrier = threading.Barrier(8)

    def send(bodies):
        try:
            send_all(bodies)
        finally:
            connections.close_all()

    def send_all(bodies):
        client = _client(raw_key)
        barrier.wait(30)
        for payload in bodies:
            for _attempt in range(20):
                status = client.post("/v1/traces", payload, content_type=PROTOBUF).status_code
                if status == 200:
                    break
                if status not in (429, 503):
                    failures.append(status)
                    break
                retried.append(status)
                time.sleep(0.05)
            else:
                failures.append("never 200")

    threads = [threading.Thread(target=send, args=(b,)) for b in bodies_per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == []
    print(f"retried answers: {len(retried)}")
    assert AgentTrace.objects.count() == 20
    for t in AgentTrace.objects.all():
        assert _tool_names(t) == [f"tool_{i}" for i in range(6)], t.otel_trace_id
    assert not OtlpSpan.objects.filter(payload__isnull=False).exists()
    totals = assert_ledger_balances()
    sent = sum(
        len(ExportTraceServiceRequest.FromString(b).resource_spans[0].scope_spans[0].spans)
        for bodies in bodies_per_thread
        for b in bodies
    )
    assert totals["received"] == sent == 8 * len(spans)
    assert totals["stored"] == len(spans) == OtlpSpan.objects.count()
    assert totals["duplicate"] == sent - len(spans) and totals["dropped"] == 0


def test_a_span_repeated_within_one_request_is_received_twice_and_counted_as_a_duplicate(db, exporter):
    trace = FakeTrace(seed=91)
    tool = trace.tool("lookup", 1000)
    assert exporter(body([trace.root(), tool, tool])) == 200
    stored = AgentTrace.objects.get(otel_trace_id=trace.hex)
    assert _tool_names(stored) == ["lookup"]
    assert assert_ledger_balances() == {"received": 3, "stored": 2, "duplicate": 1, "rejected": 0, "dropped": 0}


# --- 6. what a deleted trace leaves behind ----------------------------------------------------------


@pytest.mark.parametrize("delete", ["expire", "clear"])
def test_a_deleted_otlp_trace_takes_its_span_ids_and_comes_back_when_sent_again(db, exporter, delete):
    """Retention and /clear delete the span ids OTLP kept for the trace: none is left behind, and the
    same spans exported again make the trace anew instead of being taken for duplicates."""
    from apps.traces.services import traces_clear

    trace, other = FakeTrace(seed=61), FakeTrace(seed=62)
    spans = [trace.root(), *trace.tools(3)]
    assert exporter(body(spans)) == 200
    AgentTrace.objects.update(created_at=timezone.now() - timedelta(days=40))
    assert exporter(body([other.root(), *other.tools(1)])) == 200  # young: retention keeps it
    assert OtlpSpan.objects.filter(otel_trace_id=trace.hex).count() == 4

    if delete == "expire":
        from apps.core.models import Project
        from apps.traces.services import traces_expire

        gone = traces_expire(Project.objects.get(slug="default"), timezone.now() - timedelta(days=30), 100)
        assert gone == 1
        assert OtlpSpan.objects.filter(otel_trace_id=other.hex).count() == 2
    else:
        assert traces_clear() == 2
    assert not OtlpSpan.objects.filter(otel_trace_id=trace.hex).exists()
    assert not ToolCall.objects.filter(trace__otel_trace_id=trace.hex).exists()

    assert exporter(body(spans)) == 200
    again = AgentTrace.objects.get(otel_trace_id=trace.hex)
    assert _tool_names(again) == ["tool_0", "tool_1", "tool_2"]
