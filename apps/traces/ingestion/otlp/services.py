"""Assembling OpenTelemetry spans into AgentTrace and ToolCall rows.

Spans of one trace arrive in any order, over any number of requests, and whole batches are
retried. Every span is first recorded in OtlpSpan, keyed by (project, trace id, span id) with ON
CONFLICT DO NOTHING, so a span its project sent before is dropped there. Then, per OpenTelemetry
trace of the export's project:

- its AgentTrace exists (the root came earlier): the new spans are merged into it under its row
  lock, each tool call taking a free seq between its neighbours by start time;
- the root span is among the new spans: the AgentTrace is created, completed or failed, from the
  root, the children in this request and (up to EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS of) the children
  that waited in OtlpSpan;
- neither: the spans wait in OtlpSpan with their mapped content until the root arrives.

Assembly is idempotent and cannot be lost. After its commit, every export settles every trace it
touched, duplicates included (see `_settle`): children still waiting for a trace that exists are
claimed and merged, in bounded chunks. So a root's export killed between its commit and the
assembly is repaired by the exporter's retry (all duplicates), by any later export of the trace,
or by the periodic reaper (`otlp_traces_settle`), which runs before the prune deletes anything.
Two concurrent requests holding a root and its children cannot each miss the other either: each
settles after its own commit, so whichever commits last sees the other's rows. Nothing is locked
across requests, so exports that share a trace never wait for each other; an identical span sent
twice at once waits on the span table's primary key and is dropped.

ToolCall.seq is a sort key, not a position: calls are placed `_seq_gap()` apart, a late call that
started earlier takes a free value between its neighbours, and only a gap used up renumbers the
trace (rare, bounded by the per-trace cap). Readers number the calls 1..n in seq order.

Per-trace caps: EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE tool calls, EVALSITE_OTLP_MAX_SPANS_PER_TRACE
spans waiting for their root, EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES of unmapped attributes. What a cap
refuses is counted on the trace (`truncated`, `dropped`) and in the ingestion ledger ("trace_cap").

Every export writes one ledger entry in its storing transaction: received = stored + duplicate +
rejected + dropped. A tool span stored waiting and dropped by the cap when assembled, and a span
that waited for a root that never came (pruned), are moved from stored to dropped by a correction
entry dated at their arrival, in the ledger of the project that sent them (OtlpSpan.project).

Trace and span ids are the client's, so they are unique per project only (OtlpSpan's key leads with
the project, AgentTrace's is (otel_trace_id, project)): the same trace id sent to two projects (a
trace that crossed two teams' services, or a replay) makes two traces, each of its own project's
spans; a span is a duplicate only of what its own project stored; a root assembles, and the reaper
settles, only the waiting spans of the trace's own project. No project learns through a refusal or
a merge that another holds a trace id. The spans stored that end up in a trace (not those a cap
refused) are counted on it as they are merged (AgentTrace.ledger_units, in the UPDATE or INSERT that
stores the trace), so retention moves exactly them to dropped ("expired") when the trace expires.

The write path is built for throughput: per request a handful of statements whatever the number
of spans (one INSERT … SELECT FROM unnest for the spans, one bulk INSERT for traces, one COPY for
tool calls on PostgreSQL), and no ORM object per span.
"""

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.core.models import project_pk
from apps.traces import fastpath
from apps.traces.costs import PriceBookOnce
from apps.traces.ledger import ingestion_record
from apps.traces.models import AgentTrace, OtlpSpan
from apps.traces.spend import SpendChanges

from ..writer import traces_completed_announce
from .assembly import NewTrace, build_trace, insert_traces, merge_into_trace
from .mapping import SpanRecord

_SPAN_TABLE = OtlpSpan._meta.db_table
_SQLITE_ROWS_PER_INSERT = 200
# Spans dropped by the waiting cap keep their id (a re-send is a duplicate) and lose their content;
# one of them per export carries this mark with how many were dropped, which the assembly adds to
# the trace's counts (one row to claim, not one per dropped span).
_DROPPED_MARK = "spans"
_LEDGER_SOURCE = "otlp"


@dataclass
class IngestOutcome:
    spans_new: int = 0
    spans_duplicate: int = 0
    spans_dropped: int = 0
    traces_created: list[int] = field(default_factory=list)
    traces_updated: list[int] = field(default_factory=list)
    spans_waiting: int = 0


def _bound_lock_waits() -> None:
    """PostgreSQL: a row another export holds (the same span sent twice at once, a trace being
    merged into) is waited for at most EVALSITE_OTLP_LOCK_TIMEOUT_MS; then OperationalError, which
    the view answers 503 with Retry-After, rather than holding the exporter until it times out."""
    if fastpath.enabled():
        fastpath.execute(f"SET LOCAL lock_timeout = {int(settings.EVALSITE_OTLP_LOCK_TIMEOUT_MS)}")


def _chunk() -> int:
    return max(int(settings.EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS), 1)


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def _record_corrections(moved: Counter, reason: str) -> None:
    """Spans counted as stored when they arrived, dropped now: one entry per (project, arrival hour),
    keyed so in `moved`, so the day they arrived still balances in the ledger that counted them."""
    for (project_id, hour), n in sorted(moved.items()):
        ingestion_record(project=project_id, source=_LEDGER_SOURCE, stored=-n, dropped={reason: n}, at=hour)


def _traces_of(project_id: int, trace_ids) -> dict[str, int]:
    """The project's AgentTrace pk per OpenTelemetry trace id, for those of `trace_ids` it holds.
    Looked up by trace id alone, the project compared here (a trace id is in one project or a few):
    with the project in the WHERE clause, PostgreSQL planned a scan of all the project's traces by an
    index that leads with the project whenever its statistics thought the project small (a new one)."""
    if not trace_ids:
        return {}
    return {
        trace_id: pk
        for trace_id, owner, pk in AgentTrace.objects.filter(otel_trace_id__in=list(trace_ids)).values_list(
            "otel_trace_id", "project_id", "pk"
        )
        if owner == project_id
    }


def _insert_spans(
    records: list[SpanRecord], payloads: list[str | None], now: datetime, project_id: int
) -> set[tuple[str, str]]:
    """Record the spans in the project; returns the (trace id, span id) of those it had not seen."""
    new: set[tuple[str, str]] = set()
    if fastpath.enabled():
        trace_ids = ",".join([r.trace_id for r in records])
        span_ids = ",".join([r.span_id for r in records])
        # Ids are hex, so a comma-joined string is one cheap parameter; psycopg adapts a Python
        # list element by element, which cost more than the rest of the statement.
        if any(payloads):
            values = (
                "unnest(string_to_array(%s, ','), string_to_array(%s, ','), %s::text[])",
                [trace_ids, span_ids, payloads],
            )
        else:
            values = ("unnest(string_to_array(%s, ','), string_to_array(%s, ','), NULL::text[])", [trace_ids, span_ids])
        # Answers with the spans that were already there (usually none) rather than the new ones.
        # Inserted in key order: two exports sharing spans wait for each other in one order only,
        # never in a cycle (a deadlock, answered 503 and retried).
        seen_before = set(
            fastpath.fetch_all(
                f"WITH input AS (SELECT t, s, p FROM {values[0]} AS u(t, s, p)), "
                f"inserted AS (INSERT INTO {_SPAN_TABLE} (project_id, otel_trace_id, span_id, received_at, payload) "
                "SELECT %s, t, s, %s, p::jsonb FROM input ORDER BY t, s ON CONFLICT DO NOTHING "
                "RETURNING otel_trace_id, span_id) "
                "SELECT t, s FROM input EXCEPT ALL SELECT otel_trace_id, span_id FROM inserted",
                [*values[1], project_id, now],
            )
        )
        return {(r.trace_id, r.span_id) for r in records} - seen_before
    for start in range(0, len(records), _SQLITE_ROWS_PER_INSERT):
        chunk = range(start, min(start + _SQLITE_ROWS_PER_INSERT, len(records)))
        params: list = []
        for i in chunk:
            params += [project_id, records[i].trace_id, records[i].span_id, now, payloads[i]]
        new.update(
            fastpath.fetch_all(
                f"INSERT INTO {_SPAN_TABLE} (project_id, otel_trace_id, span_id, received_at, payload) VALUES "
                + ", ".join(["(%s, %s, %s, %s, %s)"] * len(chunk))
                + " ON CONFLICT DO NOTHING RETURNING otel_trace_id, span_id",
                params,
            )
        )
    return new


def _keep_waiting(records: list[SpanRecord], project_id: int) -> None:
    for r in records:
        OtlpSpan.objects.filter(project_id=project_id, otel_trace_id=r.trace_id, span_id=r.span_id).update(
            payload=r.to_payload()
        )


def _cap_waiting(fresh_waiting: dict[str, list[SpanRecord]], project_id: int) -> dict[str, int]:
    """Spans of a trace with no root yet beyond EVALSITE_OTLP_MAX_SPANS_PER_TRACE keep only their id
    (and a mark the assembly counts): a root arriving after any number of children costs a bounded
    amount of work. Counted per project: another project's spans of the same trace id use none of
    this one's cap. Returns, per trace, how many of this request's spans were dropped."""
    if not fresh_waiting:
        return {}
    cap = int(settings.EVALSITE_OTLP_MAX_SPANS_PER_TRACE)
    # One grouped count over the waiting spans' partial index (usually a trace or two per export).
    counts = dict(
        OtlpSpan.objects.filter(project_id=project_id, otel_trace_id__in=list(fresh_waiting), payload__isnull=False)
        .exclude(payload__has_key="dropped")
        .values("otel_trace_id")
        .annotate(n=Count("*"))
        .values_list("otel_trace_id", "n")
    )
    dropped: dict[str, int] = {}
    for trace_id, group in fresh_waiting.items():
        excess = min(counts.get(trace_id, 0) - cap, len(group))
        if excess <= 0:
            continue
        # The latest-starting of this request's spans go: a trace keeps its beginning.
        victims = [r.span_id for r in sorted(group, key=lambda r: (r.start_ns, r.span_id))[-excess:]]
        spans = OtlpSpan.objects.filter(project_id=project_id, otel_trace_id=trace_id)
        spans.filter(span_id__in=victims[1:]).update(payload=None)
        spans.filter(span_id=victims[0]).update(payload={"dropped": _DROPPED_MARK, "count": excess})
        dropped[trace_id] = excess
    return dropped


@dataclass
class _Claimed:
    """Spans taken from OtlpSpan for one trace: their records, when each arrived, and how many had
    been dropped by the waiting cap before (their marks)."""

    records: list[SpanRecord] = field(default_factory=list)
    received: list[datetime] = field(default_factory=list)
    marked: int = 0


def _claim_waiting(trace_ids, *, project_id: int, limit: int) -> tuple[dict[str, _Claimed], bool]:
    """Take at most `limit` spans the project stored earlier for these traces that still wait for
    their root. Clearing the payload is the claim: of two requests settling the same trace, only one
    gets each span. Returns the spans per trace and whether the limit was reached (more may wait)."""
    claimed: dict[str, _Claimed] = defaultdict(_Claimed)
    if not trace_ids:
        return claimed, False
    trace_ids = sorted(set(trace_ids))
    rows: list[tuple] = []
    if fastpath.enabled():
        where = "payload IS NOT NULL AND project_id = %s AND otel_trace_id = ANY(%s)"
        params: list = [project_id, trace_ids]
        # RETURNING shows the new (cleared) payload: the old one comes from the locked subquery.
        rows = fastpath.fetch_all(
            f"UPDATE {_SPAN_TABLE} AS s SET payload = NULL FROM (SELECT project_id, otel_trace_id, span_id, payload, "
            f"received_at FROM {_SPAN_TABLE} WHERE {where} ORDER BY otel_trace_id, span_id LIMIT %s "
            "FOR UPDATE) AS old WHERE s.project_id = old.project_id AND s.otel_trace_id = old.otel_trace_id "
            "AND s.span_id = old.span_id "
            # The arrival hour as epoch seconds: parsing 60K timestamps cost more than the claim.
            "RETURNING old.otel_trace_id, old.payload, "
            "extract(epoch FROM date_trunc('hour', old.received_at))::bigint",
            [*params, limit],
        )
    else:
        # SQLite runs one writing transaction at a time: read, then clear, is already atomic.
        waiting = OtlpSpan.objects.filter(project_id=project_id, payload__isnull=False, otel_trace_id__in=trace_ids)
        picked = list(
            waiting.order_by("otel_trace_id", "span_id").values_list(
                "otel_trace_id", "span_id", "payload", "received_at"
            )[:limit]
        )
        by_trace: dict[str, list[str]] = defaultdict(list)
        for trace_id, span_id, payload, received_at in picked:
            by_trace[trace_id].append(span_id)
            rows.append((trace_id, payload, received_at))
        for trace_id, span_ids in by_trace.items():
            for start in range(0, len(span_ids), _SQLITE_ROWS_PER_INSERT):
                OtlpSpan.objects.filter(
                    project_id=project_id,
                    otel_trace_id=trace_id,
                    span_id__in=span_ids[start : start + _SQLITE_ROWS_PER_INSERT],
                ).update(payload=None)
    hours: dict[int, datetime] = {}
    for trace_id, payload, received_at in rows:
        if isinstance(payload, (str, bytes)):
            payload = orjson.loads(payload)
        if isinstance(received_at, int):
            received_at = hours.get(received_at) or hours.setdefault(
                received_at, datetime.fromtimestamp(received_at, tz=UTC)
            )
        elif isinstance(received_at, str):
            received_at = parse_datetime(received_at)
        entry = claimed[trace_id]
        if payload.get("dropped"):
            entry.marked += payload.get("count", 1)
            continue
        entry.records.append(SpanRecord.from_payload(payload))
        entry.received.append(received_at)
    return claimed, len(rows) >= limit


# --- the entry point -----------------------------------------------------------------------------


def otlp_spans_ingest(
    *,
    records: list[SpanRecord],
    rejected: dict[str, int] | None = None,
    repeated: int = 0,
    project_id: int | None = None,
    on_stored: Callable[[], None] | None = None,
) -> IngestOutcome:
    """Store the spans of one export request (already mapped) in the project (`default` if None),
    assembling traces as their roots arrive. Trace and span ids are unique per project: spans of a
    trace id another project holds make this project's own trace, and neither sees the other's
    spans. `rejected`: per reason, the spans of the request refused before storage; with the
    records they make the request's ledger entry. `repeated`: spans the request held more than once,
    mapped once; the repeats are received and counted as duplicates. `on_stored` runs in the
    transaction that stores the spans (the request's redaction counts), not when nothing is."""
    project_id = project_pk(project_id)
    rejected = {reason: n for reason, n in (rejected or {}).items() if n}
    outcome = IngestOutcome()
    if not records:
        if rejected:
            with transaction.atomic():
                ingestion_record(
                    project=project_id, source=_LEDGER_SOURCE, received=sum(rejected.values()), rejected=rejected
                )
        return outcome
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for r in records:
        by_trace[r.trace_id].append(r)
    now = timezone.now()
    prices = PriceBookOnce()
    spend = SpendChanges()
    with transaction.atomic():
        _bound_lock_waits()
        known = _traces_of(project_id, by_trace)
        with_root = {t for t, group in by_trace.items() if t not in known and any(r.is_root for r in group)}
        # Only spans that will wait for their root keep their content in OtlpSpan.
        payloads = [
            None if r.trace_id in known or r.trace_id in with_root else orjson.dumps(r.to_payload()).decode()
            for r in records
        ]
        new_keys = _insert_spans(records, payloads, now, project_id)
        outcome.spans_new = len(new_keys)
        outcome.spans_duplicate = len(records) - len(new_keys)

        dropped_now = 0  # spans of this request a cap refused
        moved: Counter = Counter()  # waiting spans (stored earlier) a cap refused, by (project, arrival hour)
        new_traces: list[NewTrace] = []
        to_assemble = [t for t in with_root if any((t, r.span_id) in new_keys and r.is_root for r in by_trace[t])]
        # The children that waited, at most a chunk of them: the rest are merged after the commit.
        waiting, _more = _claim_waiting(to_assemble, project_id=project_id, limit=_chunk())
        fresh_waiting: dict[str, list[SpanRecord]] = {}
        # In trace id order: the row locks of traces merged into are taken in one order by everyone.
        for trace_id, group in sorted(by_trace.items()):
            fresh = [r for r in group if (trace_id, r.span_id) in new_keys]
            if not fresh:
                continue
            if trace_id in known:
                refused = merge_into_trace(known[trace_id], fresh, spend=spend, prices=prices)
                dropped_now += len(refused)
                outcome.traces_updated.append(known[trace_id])
            elif trace_id in to_assemble:
                claimed = waiting.get(trace_id) or _Claimed()
                fresh_ids = {r.span_id for r in fresh}
                stored = [
                    (r, at)
                    for r, at in zip(claimed.records, claimed.received, strict=True)
                    if r.span_id not in fresh_ids
                ]
                roots = sorted((r for r in fresh if r.is_root), key=lambda r: (r.start_ns, r.span_id))
                built = build_trace(roots[0], fresh + [r for r, _ in stored], marked=claimed.marked, prices=prices)
                built.trace.project_id = project_id
                arrived = {
                    id(r): at
                    for r, at in zip(claimed.records, claimed.received, strict=True)
                    if r.span_id not in fresh_ids
                }
                for r in built.tools_dropped:
                    if id(r) in arrived:
                        moved[(project_id, _hour(arrived[id(r)]))] += 1
                    else:
                        dropped_now += 1
                new_traces.append(built)
            else:
                if trace_id in with_root:
                    # Its root was new when this export looked, and a duplicate when it inserted: a
                    # concurrent export stored it first and is creating the trace. These spans were
                    # stored without content: they wait like any child, and the settle merges them.
                    _keep_waiting(fresh, project_id)
                outcome.spans_waiting += len(fresh)
                fresh_waiting[trace_id] = fresh
        capped = _cap_waiting(fresh_waiting, project_id)
        dropped_now += sum(capped.values())
        if new_traces:
            insert_traces(new_traces, spend=spend)
            outcome.traces_created = [n.trace.pk for n in new_traces]
            traces_completed_announce(trace_ids=outcome.traces_created)
        outcome.spans_dropped = dropped_now
        ingestion_record(
            project=project_id,
            source=_LEDGER_SOURCE,
            received=len(records) + repeated + sum(rejected.values()),
            stored=len(new_keys) - dropped_now,
            duplicate=outcome.spans_duplicate + repeated,
            rejected=rejected,
            dropped={"trace_cap": dropped_now},
        )
        _record_corrections(moved, "trace_cap")
        # Last, after every trace row lock (apps.traces.spend).
        spend.write()
        if on_stored is not None:
            on_stored()
    # Every trace this export touched, duplicates included: a retry of an export whose assembly was
    # interrupted (a 503 on a lock wait, a killed worker) repairs its traces.
    outcome.traces_updated += _settle(set(by_trace), project_id)
    return outcome


def _settle(trace_ids: set[str], project_id: int | None = None) -> list[int]:
    """After commit: merge the children still waiting for the project's traces (`default` if None)
    that exist by now: those a concurrent request stored while this one created their trace, those
    beyond the chunk a root's export assembles in its own transaction, those an interrupted assembly
    left. Each chunk of spans is claimed and merged in its own transaction, so memory and lock time
    stay bounded whatever the number of children. Idempotent: a span is claimed once."""
    project_id = project_pk(project_id)
    updated: list[int] = []
    prices = PriceBookOnce()
    spend = SpendChanges()
    while True:
        if not _settle_needed(trace_ids, project_id):
            return list(dict.fromkeys(updated))
        with transaction.atomic():
            _bound_lock_waits()
            known = _traces_of(project_id, trace_ids)
            claimed, more = _claim_waiting(known, project_id=project_id, limit=_chunk())
            moved: Counter = Counter()
            # In trace id order: two settlers sharing traces take their row locks in the same order.
            for trace_id in sorted(claimed):
                spans = claimed[trace_id]
                refused = merge_into_trace(
                    known[trace_id], spans.records, spend=spend, prices=prices, marked=spans.marked, fill_fields=True
                )
                for i in refused:
                    moved[(project_id, _hour(spans.received[i]))] += 1
                updated.append(known[trace_id])
            _record_corrections(moved, "trace_cap")
            spend.write()
        if not more:
            return list(dict.fromkeys(updated))


def _settle_needed(trace_ids, project_id: int) -> bool:
    """Whether any of these traces exists in the project and has spans of the project waiting: two
    cheap statements (the second only when a trace exists), so the usual export (nothing to settle)
    opens no transaction."""
    existing = _traces_of(project_id, trace_ids)
    if not existing:
        return False
    return OtlpSpan.objects.filter(
        project_id=project_id, payload__isnull=False, otel_trace_id__in=sorted(existing)
    ).exists()


def otlp_traces_settle(*, batch: int = 500) -> int:
    """The reaper: settle every trace that has spans of its project waiting although its AgentTrace
    exists (an assembly interrupted and never retried). Returns how many traces it merged spans into."""
    settled = 0
    after = Q()
    while True:
        # Waiting spans whose trace id has a trace in any project, by trace id alone (see _traces_of);
        # _settle merges only into a trace of the span's own project, and does nothing for the others.
        pairs = list(
            OtlpSpan.objects.filter(
                after,
                payload__isnull=False,
                otel_trace_id__in=AgentTrace.objects.filter(otel_trace_id__isnull=False).values("otel_trace_id"),
            )
            .order_by("project_id", "otel_trace_id")
            .values_list("project_id", "otel_trace_id")
            .distinct()[:batch]
        )
        if not pairs:
            return settled
        by_project: dict[int, set[str]] = defaultdict(set)
        for project_id, trace_id in pairs:
            by_project[project_id].add(trace_id)
        for project_id, trace_ids in sorted(by_project.items()):
            settled += len(_settle(trace_ids, project_id))
        last_project, last_trace = pairs[-1]
        after = Q(project_id__gt=last_project) | Q(project_id=last_project, otel_trace_id__gt=last_trace)


def _waiting_forget(where: str, params: list, reason: str) -> int:
    """Delete the spans still waiting for their root (content kept, not a cap's mark) that `where`
    selects, each counted in the ledger of the project that sent it as dropped (`reason`) at the hour
    it arrived: they were counted as stored then, and no trace holds them. Counted from what the
    DELETE removed, not a count before it: a span claimed meanwhile by an assembly is not dropped.
    Returns how many went."""
    moved: Counter = Counter()
    not_marked = "payload->>'dropped' IS NULL" if fastpath.enabled() else "json_extract(payload, '$.dropped') IS NULL"
    for received_at, project_id in fastpath.fetch_all(
        f"DELETE FROM {_SPAN_TABLE} WHERE {where} AND payload IS NOT NULL AND {not_marked} "
        "RETURNING received_at, project_id",
        params,
    ):
        if isinstance(received_at, str):
            received_at = parse_datetime(received_at)
        if timezone.is_naive(received_at):
            received_at = timezone.make_aware(received_at, UTC)
        moved[(project_id, _hour(received_at))] += 1
    _record_corrections(moved, reason)
    return sum(moved.values())


def otlp_spans_prune(*, older_than) -> int:
    """Forget span ids older than the retry window. Spans still waiting for a root that never came
    are dropped with them, each counted in the ledger as dropped ("orphan") at the hour it arrived.
    Traces whose root did come are settled first, so no child of an existing trace is dropped.
    Returns how many rows were deleted."""
    otlp_traces_settle()
    cutoff = timezone.now() - older_than
    with transaction.atomic():
        # Each in the ledger of the project that sent it.
        orphans = _waiting_forget("received_at < %s", [cutoff], "orphan")
        deleted, _ = OtlpSpan.objects.filter(received_at__lt=cutoff).delete()
    return deleted + orphans


def otlp_waiting_expire(*, project_id: int, otel_trace_ids: list[str]) -> int:
    """Retention, before it forgets the span ids of the project's expired traces: the project's
    spans of those traces still waiting (a settle not run yet) were counted as stored and are in no
    trace, so each is counted as dropped ("expired") at the hour it arrived. Another project's spans
    of the same trace ids are its own and stay. Call it in the deleting transaction. Returns how many."""
    if not otel_trace_ids:
        return 0
    return _waiting_forget(
        f"project_id = %s AND otel_trace_id IN ({', '.join(['%s'] * len(otel_trace_ids))})",
        [project_id, *otel_trace_ids],
        "expired",
    )
