"""Assembling OpenTelemetry spans into AgentTrace and ToolCall rows.

Spans of one trace arrive in any order, over any number of requests, and whole batches are
retried. Every span is first recorded in OtlpSpan, keyed by (trace id, span id) with ON CONFLICT
DO NOTHING, so a span seen before is dropped there. Then, per OpenTelemetry trace:

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
entry dated at their arrival.

The write path is built for throughput: per request a handful of statements whatever the number
of spans (one INSERT … SELECT FROM unnest for the spans, one bulk INSERT for traces, one COPY for
tool calls on PostgreSQL), and no ORM object per span.
"""

from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import orjson
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, JSONField
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.traces.ledger import ingestion_record
from apps.traces.models import AgentTrace, OtlpSpan, ToolCall
from apps.traces.services import _announce_completed, json_text, tool_call_rows_insert

from .mapping import SpanRecord

_SPAN_TABLE = OtlpSpan._meta.db_table
_TRACE_TABLE = AgentTrace._meta.db_table
_CALL_TABLE = ToolCall._meta.db_table
_SQLITE_ROWS_PER_INSERT = 200
_MAX_SESSION_ID = 255
# ToolCall.seq is a PositiveIntegerField: an integer column on PostgreSQL.
_SEQ_LIMIT = 2**31 - 1
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
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = {int(settings.EVALSITE_OTLP_LOCK_TIMEOUT_MS)}")


def _chunk() -> int:
    return max(int(settings.EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS), 1)


def _seq_gap(count: int = 0) -> int:
    """The distance between consecutive seqs of a freshly numbered trace. Twice (cap + 2) gaps fit
    below the column's limit: a renumbering first moves the rows above the highest seq."""
    most = max(int(settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE), count)
    return max(1, min(1 << 16, _SEQ_LIMIT // (2 * (most + 2))))


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def _record_corrections(moved: Counter, reason: str) -> None:
    """Spans counted as stored when they arrived, dropped now: one entry per arrival hour, so the
    day they arrived still balances."""
    for hour, n in sorted(moved.items()):
        ingestion_record(source=_LEDGER_SOURCE, stored=-n, dropped={reason: n}, at=hour)


def _insert_spans(records: list[SpanRecord], payloads: list[str | None], now: datetime) -> set[tuple[str, str]]:
    """Record the spans; returns the (trace id, span id) of those not seen before."""
    new: set[tuple[str, str]] = set()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            trace_ids = ",".join([r.trace_id for r in records])
            span_ids = ",".join([r.span_id for r in records])
            # Ids are hex, so a comma-joined string is one cheap parameter; psycopg adapts a Python
            # list element by element, which cost more than the rest of the statement.
            if any(payloads):
                values = ("unnest(string_to_array(%s, ','), string_to_array(%s, ','), %s::text[])", [
                    trace_ids, span_ids, payloads])
            else:
                values = ("unnest(string_to_array(%s, ','), string_to_array(%s, ','), NULL::text[])", [
                    trace_ids, span_ids])
            # Answers with the spans that were already there (usually none) rather than the new ones.
            # Inserted in key order: two exports sharing spans wait for each other in one order only,
            # never in a cycle (a deadlock, answered 503 and retried).
            cursor.execute(
                f"WITH input AS (SELECT t, s, p FROM {values[0]} AS u(t, s, p)), "
                f"inserted AS (INSERT INTO {_SPAN_TABLE} (otel_trace_id, span_id, received_at, payload) "
                "SELECT t, s, %s, p::jsonb FROM input ORDER BY t, s ON CONFLICT DO NOTHING "
                "RETURNING otel_trace_id, span_id) "
                "SELECT t, s FROM input EXCEPT ALL SELECT otel_trace_id, span_id FROM inserted",
                [*values[1], now],
            )
            seen_before = set(cursor.fetchall())
            return {(r.trace_id, r.span_id) for r in records} - seen_before
        for start in range(0, len(records), _SQLITE_ROWS_PER_INSERT):
            chunk = range(start, min(start + _SQLITE_ROWS_PER_INSERT, len(records)))
            params: list = []
            for i in chunk:
                params += [records[i].trace_id, records[i].span_id, now, payloads[i]]
            cursor.execute(
                f"INSERT INTO {_SPAN_TABLE} (otel_trace_id, span_id, received_at, payload) VALUES "
                + ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
                + " ON CONFLICT DO NOTHING RETURNING otel_trace_id, span_id",
                params,
            )
            new.update(cursor.fetchall())
    return new


def _keep_waiting(records: list[SpanRecord]) -> None:
    for r in records:
        OtlpSpan.objects.filter(otel_trace_id=r.trace_id, span_id=r.span_id).update(payload=r.to_payload())


def _cap_waiting(fresh_waiting: dict[str, list[SpanRecord]]) -> dict[str, int]:
    """Spans of a trace with no root yet beyond EVALSITE_OTLP_MAX_SPANS_PER_TRACE keep only their id
    (and a mark the assembly counts): a root arriving after any number of children costs a bounded
    amount of work. Returns, per trace, how many of this request's spans were dropped."""
    if not fresh_waiting:
        return {}
    cap = int(settings.EVALSITE_OTLP_MAX_SPANS_PER_TRACE)
    # One grouped count over the waiting spans' partial index (usually a trace or two per export).
    counts = dict(OtlpSpan.objects.filter(otel_trace_id__in=list(fresh_waiting), payload__isnull=False)
                  .exclude(payload__has_key="dropped")
                  .values("otel_trace_id").annotate(n=Count("*")).values_list("otel_trace_id", "n"))
    dropped: dict[str, int] = {}
    for trace_id, group in fresh_waiting.items():
        excess = min(counts.get(trace_id, 0) - cap, len(group))
        if excess <= 0:
            continue
        # The latest-starting of this request's spans go: a trace keeps its beginning.
        victims = [r.span_id for r in sorted(group, key=lambda r: (r.start_ns, r.span_id))[-excess:]]
        OtlpSpan.objects.filter(otel_trace_id=trace_id, span_id__in=victims[1:]).update(payload=None)
        OtlpSpan.objects.filter(otel_trace_id=trace_id, span_id=victims[0]).update(
            payload={"dropped": _DROPPED_MARK, "count": excess})
        dropped[trace_id] = excess
    return dropped


@dataclass
class _Claimed:
    """Spans taken from OtlpSpan for one trace: their records, when each arrived, and how many had
    been dropped by the waiting cap before (their marks)."""

    records: list[SpanRecord] = field(default_factory=list)
    received: list[datetime] = field(default_factory=list)
    marked: int = 0


def _claim_waiting(trace_ids, *, created_only: bool = False, limit: int) -> tuple[dict[str, _Claimed], bool]:
    """Take at most `limit` spans stored earlier for these traces that still wait for their root.
    Clearing the payload is the claim: of two requests settling the same trace, only one gets each
    span. `created_only`: only for those of the traces that have an AgentTrace by now. Returns the
    spans per trace and whether the limit was reached (more may wait)."""
    claimed: dict[str, _Claimed] = defaultdict(_Claimed)
    if not trace_ids:
        return claimed, False
    trace_ids = sorted(set(trace_ids))
    rows: list[tuple] = []
    if connection.vendor == "postgresql":
        where = "payload IS NOT NULL AND otel_trace_id = ANY(%s)"
        params: list = [trace_ids]
        if created_only:
            where += f" AND otel_trace_id IN (SELECT otel_trace_id FROM {_TRACE_TABLE} WHERE otel_trace_id = ANY(%s))"
            params.append(trace_ids)
        with connection.cursor() as cursor:
            # RETURNING shows the new (cleared) payload: the old one comes from the locked subquery.
            cursor.execute(
                f"UPDATE {_SPAN_TABLE} AS s SET payload = NULL FROM (SELECT otel_trace_id, span_id, payload, "
                f"received_at FROM {_SPAN_TABLE} WHERE {where} ORDER BY otel_trace_id, span_id LIMIT %s "
                "FOR UPDATE) AS old WHERE s.otel_trace_id = old.otel_trace_id AND s.span_id = old.span_id "
                # The arrival hour as epoch seconds: parsing 60K timestamps cost more than the claim.
                "RETURNING old.otel_trace_id, old.payload, "
                "extract(epoch FROM date_trunc('hour', old.received_at))::bigint", [*params, limit])
            rows = cursor.fetchall()
    else:
        # SQLite runs one writing transaction at a time: read, then clear, is already atomic.
        waiting = OtlpSpan.objects.filter(payload__isnull=False, otel_trace_id__in=trace_ids)
        if created_only:
            waiting = waiting.filter(otel_trace_id__in=AgentTrace.objects.filter(otel_trace_id__in=trace_ids)
                                     .values("otel_trace_id"))
        picked = list(waiting.order_by("otel_trace_id", "span_id")
                      .values_list("otel_trace_id", "span_id", "payload", "received_at")[:limit])
        by_trace: dict[str, list[str]] = defaultdict(list)
        for trace_id, span_id, payload, received_at in picked:
            by_trace[trace_id].append(span_id)
            rows.append((trace_id, payload, received_at))
        for trace_id, span_ids in by_trace.items():
            for start in range(0, len(span_ids), _SQLITE_ROWS_PER_INSERT):
                OtlpSpan.objects.filter(otel_trace_id=trace_id,
                                        span_id__in=span_ids[start:start + _SQLITE_ROWS_PER_INSERT]).update(payload=None)
    hours: dict[int, datetime] = {}
    for trace_id, payload, received_at in rows:
        if isinstance(payload, (str, bytes)):
            payload = orjson.loads(payload)
        if isinstance(received_at, int):
            received_at = hours.get(received_at) or hours.setdefault(
                received_at, datetime.fromtimestamp(received_at, tz=dt_timezone.utc))
        elif isinstance(received_at, str):
            received_at = parse_datetime(received_at)
        entry = claimed[trace_id]
        if payload.get("dropped"):
            entry.marked += payload.get("count", 1)
            continue
        entry.records.append(SpanRecord.from_payload(payload))
        entry.received.append(received_at)
    return claimed, len(rows) >= limit


# --- building a trace ----------------------------------------------------------------------------

def _first(values):
    return next((v for v in values if v), None)


def _bounded_spans_metadata(records: list[SpanRecord], budget: int) -> tuple[list[dict], int, int]:
    """The unmapped attributes of the spans, as much as `budget` bytes allow. Returns the entries
    kept, how many spans' entries were dropped and their size in bytes."""
    kept, dropped, dropped_bytes, size = [], 0, 0, 0
    for r in records:
        if not r.attributes:
            continue
        entry = {"span_id": r.span_id, "name": r.name, "kind": r.kind, "attributes": r.attributes}
        entry_size = len(orjson.dumps(entry, default=str))
        if size + entry_size > budget:
            dropped += 1
            dropped_bytes += entry_size
            continue
        size += entry_size
        kept.append(entry)
    return kept, dropped, dropped_bytes


def _usage(records: list[SpanRecord]) -> dict:
    llm = [r for r in records if r.kind == "llm"]
    # Agent spans often repeat the usage of the model calls under them: counted only without any.
    counted = llm or [r for r in records if r.input_tokens is not None or r.output_tokens is not None]
    usage = {}
    for key in ("input_tokens", "output_tokens"):
        values = [getattr(r, key) for r in counted if getattr(r, key) is not None]
        if values:
            usage[key] = sum(values)
    return usage


def _add_dropped(trace: AgentTrace, counts: dict[str, int]) -> None:
    counts = {k: v for k, v in counts.items() if v}
    if not counts:
        return
    dropped = dict(trace.dropped or {})
    for key, value in counts.items():
        dropped[key] = dropped.get(key, 0) + value
    trace.dropped = dropped
    trace.truncated = True


def _otel_metadata(root: SpanRecord, records: list[SpanRecord], conversation_id: str | None) -> tuple[dict, int]:
    otel: dict = {"trace_id": root.trace_id, "root_span_id": root.span_id, "root_span_name": root.name}
    if root.service_name:
        otel["service_name"] = root.service_name
    if conversation_id:
        otel["conversation_id"] = conversation_id
    models = list(dict.fromkeys(r.model for r in records if r.model))
    if models:
        otel["models"] = models
    usage = _usage(records)
    if usage:
        otel["usage"] = usage
    if root.resource:
        otel["resource"] = root.resource
    spans, dropped, dropped_bytes = _bounded_spans_metadata(
        sorted(records, key=lambda r: (r.start_ns, r.span_id)), settings.EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES)
    if spans:
        otel["spans"] = spans
    if dropped:
        otel["spans_dropped"] = dropped
    return otel, dropped_bytes


@dataclass
class _NewTrace:
    root: SpanRecord
    records: list[SpanRecord]
    tools: list[SpanRecord]
    trace: AgentTrace
    session_base: str
    # Tool spans beyond the cap, by whether they came in this request (dropped now) or waited
    # (counted as stored when they arrived: a ledger correction moves them).
    tools_dropped: list[SpanRecord] = field(default_factory=list)


def _build_trace(root: SpanRecord, records: list[SpanRecord], *, marked: int = 0) -> _NewTrace:
    by_start = sorted(records, key=lambda r: (r.start_ns, r.span_id))
    agents = [r for r in by_start if r.kind == "agent" and r is not root]
    llms = [r for r in by_start if r.kind == "llm" and r is not root]
    primary = [root, *agents]
    conversation = _first(r.conversation_id for r in primary) or _first(r.session_key for r in primary)
    session_base = conversation or f"otel_{root.trace_id}"
    tools = [r for r in by_start if r.kind == "tool" and r is not root]
    cap = int(settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE)
    tools, tools_dropped = tools[:cap], tools[cap:]
    start, end = root.start_time, root.end_time
    failed = root.failed
    otel, attribute_bytes = _otel_metadata(root, records, conversation)
    trace = AgentTrace(
        session_id=session_base[:_MAX_SESSION_ID],
        agent_name=_first(r.agent_name for r in primary) or root.service_name or root.name or "otel-agent",
        user_query=_first(r.user_query for r in primary) or _first(r.user_query for r in llms) or "",
        final_response=(_first(r.final_response for r in primary)
                        or _first(r.final_response for r in reversed(llms))),
        intent_detected=_first(r.intent for r in primary),
        resource_type=_first(r.resource_type for r in primary),
        operation=_first(r.operation for r in primary),
        success=not failed,
        error=root.error if failed else None,
        status=AgentTrace.Status.FAILED if failed else AgentTrace.Status.COMPLETED,
        start_time=start,
        end_time=end,
        duration_seconds=max((end - start).total_seconds(), 0.0),
        tool_call_count=len(tools),
        metadata={"otel": otel},
        source=AgentTrace.Source.OTLP,
        otel_trace_id=root.trace_id,
    )
    _add_dropped(trace, {"tool_calls": len(tools_dropped), "spans": marked, "attribute_bytes": attribute_bytes})
    return _NewTrace(root=root, records=records, tools=tools, trace=trace, session_base=session_base,
                     tools_dropped=tools_dropped)


def _suffixed(base: str, trace_id: str) -> str:
    return f"{base[:_MAX_SESSION_ID - 33]}-{trace_id}"


def _assign_session_ids(new_traces: list[_NewTrace]) -> None:
    """The first trace of a conversation takes its id as session_id; later ones (session_id is
    unique) get `<conversation id>-<trace id>`, the conversation id staying in their metadata."""
    wanted = [n.trace.session_id for n in new_traces]
    taken = set(AgentTrace.objects.filter(session_id__in=wanted).values_list("session_id", flat=True))
    for n in new_traces:
        if n.trace.session_id in taken:
            n.trace.session_id = _suffixed(n.session_base, n.root.trace_id)
        taken.add(n.trace.session_id)


def _call_row(trace_pk: int, seq: int, call_id: str | None, r: SpanRecord) -> tuple:
    return (trace_pk, seq, call_id, (r.tool_name or "tool")[:255], r.tool_args or {}, r.tool_result,
            not r.failed, r.error, r.start_time, r.duration_ms)


def _tool_call_rows(new_traces: list[_NewTrace]):
    gap = _seq_gap()
    for n in new_traces:
        seen_call_ids: set[str] = set()
        for position, r in enumerate(n.tools, start=1):
            call_id = r.call_id
            if call_id is not None:
                # (trace, call_id) is unique: a tool call id repeated within a trace keeps its span apart.
                if call_id in seen_call_ids:
                    call_id = f"{call_id[:200]}:{r.span_id}"
                seen_call_ids.add(call_id)
            yield _call_row(n.trace.pk, position * gap, call_id, r)


_TRACE_COPY_FIELDS = list(AgentTrace._meta.concrete_fields)


def _copy_traces(traces: list[AgentTrace]) -> None:
    """PostgreSQL: ids reserved from the sequence, rows streamed by COPY (bulk_create adapts every
    value of every field through the ORM, a tenth of the request's CPU)."""
    now = timezone.now()
    with connection.wrap_database_errors, connection.cursor() as cursor:
        cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{_TRACE_TABLE}', 'id')) "
                       "FROM generate_series(1, %s)", [len(traces)])
        for trace, (pk,) in zip(traces, cursor.fetchall(), strict=True):
            trace.pk = pk
            trace.created_at = trace.updated_at = now
        columns = ", ".join(f.column for f in _TRACE_COPY_FIELDS)
        with cursor.cursor.copy(f"COPY {_TRACE_TABLE} ({columns}) FROM STDIN") as copy:
            for trace in traces:
                copy.write_row([json_text(getattr(trace, f.attname)) if isinstance(f, JSONField)
                                else getattr(trace, f.attname) for f in _TRACE_COPY_FIELDS])


def _insert_traces(new_traces: list[_NewTrace]) -> None:
    _assign_session_ids(new_traces)
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                _copy_traces([n.trace for n in new_traces])
            else:
                AgentTrace.objects.bulk_create([n.trace for n in new_traces])
    except IntegrityError:
        # A session id taken meanwhile by another writer (a REST agent, another conversation's trace).
        for n in new_traces:
            n.trace.pk = None
            try:
                with transaction.atomic():
                    n.trace.save(force_insert=True)
            except IntegrityError:
                n.trace.pk = None
                n.trace.session_id = _suffixed(n.session_base, n.root.trace_id)
                n.trace.save(force_insert=True)
    tool_call_rows_insert(rows=_tool_call_rows(new_traces))


# --- spans arriving after their trace ------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(microseconds=1)


def _slots(existing: list[tuple[int, int, int]], tools: list[SpanRecord]) -> dict[int, list[int]]:
    """The new calls (indexes into `tools`, sorted by start) by the number of existing calls that
    started no later than each: the slot each goes into, after those calls."""
    stamps = [ts for _id, _seq, ts in existing]
    slots: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(tools):
        slots[bisect_right(stamps, _micros(r.start_time))].append(i)
    return slots


def _place(existing: list[tuple[int, int, int]], tools: list[SpanRecord]) -> list[int] | None:
    """Seqs for new calls (sorted by start) among the existing ones ((id, seq, start in µs) in seq
    order): each goes after the calls that started no later than it, in a free value between its
    neighbours; after the last, one gap further. None when a gap is used up."""
    gap = _seq_gap(len(existing) + len(tools))
    seqs = [0] * len(tools)
    for slot, members in _slots(existing, tools).items():
        low = existing[slot - 1][1] if slot else 0
        if slot < len(existing):
            high = existing[slot][1]
            if high - low <= len(members):
                return None
            for j, i in enumerate(members, start=1):
                seqs[i] = low + (high - low) * j // (len(members) + 1)
        else:
            if low + gap * len(members) > _SEQ_LIMIT:
                return None
            for j, i in enumerate(members, start=1):
                seqs[i] = low + gap * j
    return seqs


def _renumber(trace_pk: int, existing: list[tuple[int, int, int]], tools: list[SpanRecord]) -> list[int]:
    """Number the trace's calls again, a gap apart, with the new ones in their place; the seqs of the
    new calls are returned. Rare: only when a gap between two calls is used up."""
    before = _slots(existing, tools)
    gap = _seq_gap(len(existing) + len(tools))
    seqs = [0] * len(tools)
    moved: list[tuple[int, int]] = []
    position = 0
    for slot in range(len(existing) + 1):
        for i in before.get(slot, []):
            position += 1
            seqs[i] = position * gap
        if slot < len(existing):
            position += 1
            call_id, seq, _ts = existing[slot]
            if seq != position * gap:
                moved.append((call_id, position * gap))
    if moved:
        # (trace, seq) is unique and checked row by row: first lift the trace's calls above every
        # value the new numbering uses, then set them.
        lift = max(existing[-1][1], position * gap) + 1
        ids = [pk for pk, _ in moved]
        ToolCall.objects.filter(pk__in=ids).update(seq=F("seq") + lift)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"UPDATE {_CALL_TABLE} AS c SET seq = v.seq FROM unnest(%s::bigint[], %s::int[]) "
                               "AS v(id, seq) WHERE c.id = v.id", [ids, [seq for _, seq in moved]])
            else:
                cursor.executemany(f"UPDATE {_CALL_TABLE} SET seq = %s WHERE id = %s",
                                   [(seq, pk) for pk, seq in moved])
    return seqs


def _call_keys(trace_pk: int, *, last_only: bool = False) -> list[tuple[int, int, int]]:
    """(id, seq, start in µs) of the trace's calls in seq order (only the last one if asked)."""
    if connection.vendor == "postgresql":
        # Microseconds computed by PostgreSQL: parsing 10K timestamps in Python cost more than the query.
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, seq, (extract(epoch FROM timestamp) * 1000000)::bigint FROM {_CALL_TABLE} "
                           f"WHERE trace_id = %s ORDER BY seq {'DESC LIMIT 1' if last_only else ''}", [trace_pk])
            return cursor.fetchall()
    calls = ToolCall.objects.filter(trace_id=trace_pk).order_by("-seq" if last_only else "seq")
    rows = calls.values_list("id", "seq", "timestamp")
    return [(pk, seq, _micros(ts)) for pk, seq, ts in (rows[:1] if last_only else rows)]


def _existing_calls(trace_pk: int, tools: list[SpanRecord]) -> list[tuple[int, int, int]]:
    """The trace's calls a placement needs: only the last when every new call starts after it (the
    usual late span), all of them otherwise."""
    last = _call_keys(trace_pk, last_only=True)
    if not last:
        return []
    if all(_micros(r.start_time) >= last[0][2] for r in tools):
        # Only the slot after the last call is used: no other call's seq is read or written.
        return last
    return _call_keys(trace_pk)


def _fill_trace_fields(trace: AgentTrace, records: list[SpanRecord]) -> list[str]:
    """Children that waited can carry what the root's export lacked (the user query an llm span
    saw, the agent's name on an agent span): fields still empty are filled from them."""
    by_start = sorted(records, key=lambda r: (r.start_ns, r.span_id))
    agents = [r for r in by_start if r.kind == "agent" and not r.is_root]
    llms = [r for r in by_start if r.kind == "llm"]
    changed = []
    otel = trace.metadata.get("otel") or {}
    fallback_names = {otel.get("service_name"), otel.get("root_span_name"), "otel-agent"}
    name = _first(r.agent_name for r in agents)
    if name and trace.agent_name in fallback_names:
        trace.agent_name = name
        changed.append("agent_name")
    query = _first(r.user_query for r in agents) or _first(r.user_query for r in llms)
    if query and not trace.user_query:
        trace.user_query = query
        changed.append("user_query")
    answer = _first(r.final_response for r in agents) or _first(r.final_response for r in reversed(llms))
    if answer and not trace.final_response:
        trace.final_response = answer
        changed.append("final_response")
    for attr, record_attr in (("intent_detected", "intent"), ("resource_type", "resource_type"),
                              ("operation", "operation")):
        value = _first(getattr(r, record_attr) for r in agents)
        if value and not getattr(trace, attr):
            setattr(trace, attr, value)
            changed.append(attr)
    return changed


def _merge_into_trace(trace_pk: int, records: list[SpanRecord], *, marked: int = 0,
                      fill_fields: bool = False) -> list[int]:
    """Merge spans into an existing trace under its row lock: tool calls placed by start time
    without moving the others, model usage and unmapped attributes joined to the metadata. Returns
    the indexes (in `records`) of the tool spans the cap dropped."""
    trace = AgentTrace.objects.select_for_update().get(pk=trace_pk)
    indexed_tools = sorted(((i, r) for i, r in enumerate(records) if r.kind == "tool"),
                           key=lambda item: (item[1].start_ns, item[1].span_id))
    room = max(int(settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE) - trace.tool_call_count, 0)
    kept, refused = indexed_tools[:room], indexed_tools[room:]
    tools = [r for _, r in kept]
    if tools:
        existing = _existing_calls(trace_pk, tools)
        seqs = _place(existing, tools)
        if seqs is None:
            if len(existing) < trace.tool_call_count:
                existing = _call_keys(trace_pk)
            seqs = _renumber(trace_pk, existing, tools)
        wanted = [r.call_id for r in tools if r.call_id]
        used_call_ids = set(ToolCall.objects.filter(trace_id=trace_pk, call_id__in=wanted)
                            .values_list("call_id", flat=True)) if wanted else set()
        rows = []
        for seq, r in zip(seqs, tools, strict=True):
            call_id = r.call_id
            if call_id and call_id in used_call_ids:
                call_id = f"{call_id[:200]}:{r.span_id}"
            if call_id:
                used_call_ids.add(call_id)
            rows.append(_call_row(trace_pk, seq, call_id, r))
        tool_call_rows_insert(rows=rows)
        trace.tool_call_count += len(tools)
    update_fields = ["tool_call_count", "metadata", "updated_at"]
    if fill_fields:
        update_fields += _fill_trace_fields(trace, records)
    otel = dict(trace.metadata.get("otel") or {})
    models = list(dict.fromkeys([*otel.get("models", []), *(r.model for r in records if r.model)]))
    if models:
        otel["models"] = models
    late_usage = _usage([r for r in records if r.kind == "llm"])
    if late_usage:
        usage = dict(otel.get("usage") or {})
        for key, value in late_usage.items():
            usage[key] = usage.get(key, 0) + value
        otel["usage"] = usage
    room_bytes = settings.EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES - len(orjson.dumps(otel.get("spans", []), default=str))
    spans, dropped, dropped_bytes = _bounded_spans_metadata(records, max(room_bytes, 0))
    if spans:
        otel["spans"] = [*otel.get("spans", []), *spans]
    if dropped:
        otel["spans_dropped"] = otel.get("spans_dropped", 0) + dropped
    trace.metadata = {**trace.metadata, "otel": otel}
    before = (trace.truncated, dict(trace.dropped or {}))
    _add_dropped(trace, {"tool_calls": len(refused), "spans": marked, "attribute_bytes": dropped_bytes})
    if (trace.truncated, trace.dropped) != before:
        update_fields += ["truncated", "dropped"]
    trace.save(update_fields=update_fields)
    return [i for i, _ in refused]


# --- the entry point -----------------------------------------------------------------------------

def otlp_spans_ingest(*, records: list[SpanRecord], rejected: dict[str, int] | None = None,
                      repeated: int = 0) -> IngestOutcome:
    """Store the spans of one export request (already mapped), assembling traces as their roots
    arrive. `rejected`: per reason, the spans of the request refused before storage; with the
    records they make the request's ledger entry. `repeated`: spans the request held more than once,
    mapped once; the repeats are received and counted as duplicates."""
    rejected = {reason: n for reason, n in (rejected or {}).items() if n}
    outcome = IngestOutcome()
    if not records:
        if rejected:
            with transaction.atomic():
                ingestion_record(source=_LEDGER_SOURCE, received=sum(rejected.values()), rejected=rejected)
        return outcome
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for r in records:
        by_trace[r.trace_id].append(r)
    now = timezone.now()
    with transaction.atomic():
        _bound_lock_waits()
        known = dict(AgentTrace.objects.filter(otel_trace_id__in=list(by_trace)).values_list("otel_trace_id", "pk"))
        with_root = {t for t, group in by_trace.items() if t not in known and any(r.is_root for r in group)}
        # Only spans that will wait for their root keep their content in OtlpSpan.
        payloads = [None if r.trace_id in known or r.trace_id in with_root else orjson.dumps(r.to_payload()).decode()
                    for r in records]
        new_keys = _insert_spans(records, payloads, now)
        outcome.spans_new = len(new_keys)
        outcome.spans_duplicate = len(records) - len(new_keys)

        dropped_now = 0  # spans of this request a cap refused
        moved: Counter = Counter()  # waiting spans (stored earlier) a cap refused, by arrival hour
        new_traces: list[_NewTrace] = []
        to_assemble = [t for t in with_root if any((t, r.span_id) in new_keys and r.is_root for r in by_trace[t])]
        # The children that waited, at most a chunk of them: the rest are merged after the commit.
        waiting, _more = _claim_waiting(to_assemble, limit=_chunk())
        fresh_waiting: dict[str, list[SpanRecord]] = {}
        # In trace id order: the row locks of traces merged into are taken in one order by everyone.
        for trace_id, group in sorted(by_trace.items()):
            fresh = [r for r in group if (trace_id, r.span_id) in new_keys]
            if not fresh:
                continue
            if trace_id in known:
                refused = _merge_into_trace(known[trace_id], fresh)
                dropped_now += len(refused)
                outcome.traces_updated.append(known[trace_id])
            elif trace_id in to_assemble:
                claimed = waiting.get(trace_id) or _Claimed()
                fresh_ids = {r.span_id for r in fresh}
                stored = [(r, at) for r, at in zip(claimed.records, claimed.received, strict=True)
                          if r.span_id not in fresh_ids]
                roots = sorted((r for r in fresh if r.is_root), key=lambda r: (r.start_ns, r.span_id))
                built = _build_trace(roots[0], fresh + [r for r, _ in stored], marked=claimed.marked)
                received_at = {id(r): at for r, at in stored}
                for r in built.tools_dropped:
                    if id(r) in received_at:
                        moved[_hour(received_at[id(r)])] += 1
                    else:
                        dropped_now += 1
                new_traces.append(built)
            else:
                if trace_id in with_root:
                    # Its root was new when this export looked, and a duplicate when it inserted: a
                    # concurrent export stored it first and is creating the trace. These spans were
                    # stored without content: they wait like any child, and the settle merges them.
                    _keep_waiting(fresh)
                outcome.spans_waiting += len(fresh)
                fresh_waiting[trace_id] = fresh
        capped = _cap_waiting(fresh_waiting)
        dropped_now += sum(capped.values())
        if new_traces:
            _insert_traces(new_traces)
            outcome.traces_created = [n.trace.pk for n in new_traces]
            _announce_completed(outcome.traces_created)
        outcome.spans_dropped = dropped_now
        ingestion_record(source=_LEDGER_SOURCE, received=len(records) + repeated + sum(rejected.values()),
                         stored=len(new_keys) - dropped_now, duplicate=outcome.spans_duplicate + repeated,
                         rejected=rejected,
                         dropped={"trace_cap": dropped_now})
        _record_corrections(moved, "trace_cap")
    # Every trace this export touched, duplicates included: a retry of an export whose assembly was
    # interrupted (a 503 on a lock wait, a killed worker) repairs its traces.
    outcome.traces_updated += _settle(set(by_trace))
    return outcome


def _settle(trace_ids: set[str]) -> list[int]:
    """After commit: merge the children still waiting for traces that exist by now: those a
    concurrent request stored while this one created their trace, those beyond the chunk a root's
    export assembles in its own transaction, those an interrupted assembly left. Each chunk of
    spans is claimed and merged in its own transaction, so memory and lock time stay bounded
    whatever the number of children. Idempotent: a span is claimed once."""
    updated: list[int] = []
    while True:
        if not _settle_needed(trace_ids):
            return list(dict.fromkeys(updated))
        with transaction.atomic():
            _bound_lock_waits()
            claimed, more = _claim_waiting(trace_ids, created_only=True, limit=_chunk())
            if claimed:
                known = dict(AgentTrace.objects.filter(otel_trace_id__in=list(claimed))
                             .values_list("otel_trace_id", "pk"))
                moved: Counter = Counter()
                # In trace id order: two settlers sharing traces take their row locks in the same order.
                for trace_id in sorted(claimed):
                    spans = claimed[trace_id]
                    refused = _merge_into_trace(known[trace_id], spans.records, marked=spans.marked,
                                                fill_fields=True)
                    for i in refused:
                        moved[_hour(spans.received[i])] += 1
                    updated.append(known[trace_id])
                _record_corrections(moved, "trace_cap")
        if not more:
            return list(dict.fromkeys(updated))


def _settle_needed(trace_ids) -> bool:
    """Whether any of these traces exists and has spans waiting: one cheap statement on the
    waiting spans' partial index, so the usual export (nothing to settle) opens no transaction."""
    if not trace_ids:
        return False
    trace_ids = sorted(set(trace_ids))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {_SPAN_TABLE} s JOIN {_TRACE_TABLE} t "
                           "ON t.otel_trace_id = s.otel_trace_id WHERE s.payload IS NOT NULL "
                           "AND s.otel_trace_id = ANY(%s))", [trace_ids])
            return bool(cursor.fetchone()[0])
    return OtlpSpan.objects.filter(payload__isnull=False, otel_trace_id__in=AgentTrace.objects.filter(
        otel_trace_id__in=trace_ids).values("otel_trace_id")).exists()


def otlp_traces_settle(*, batch: int = 500) -> int:
    """The reaper: settle every trace that has spans waiting although its AgentTrace exists (an
    assembly interrupted and never retried). Returns how many traces it merged spans into."""
    settled = 0
    after = ""
    while True:
        trace_ids = list(
            OtlpSpan.objects.filter(payload__isnull=False, otel_trace_id__gt=after,
                                    otel_trace_id__in=AgentTrace.objects.filter(otel_trace_id__isnull=False)
                                    .values("otel_trace_id"))
            .order_by("otel_trace_id").values_list("otel_trace_id", flat=True).distinct()[:batch])
        if not trace_ids:
            return settled
        settled += len(_settle(set(trace_ids)))
        after = trace_ids[-1]


def otlp_spans_prune(*, older_than) -> int:
    """Forget span ids older than the retry window. Spans still waiting for a root that never came
    are dropped with them, each counted in the ledger as dropped ("orphan") at the hour it arrived.
    Traces whose root did come are settled first, so no child of an existing trace is dropped.
    Returns how many rows were deleted."""
    otlp_traces_settle()
    cutoff = timezone.now() - older_than
    with transaction.atomic():
        orphans: Counter = Counter()
        with connection.cursor() as cursor:
            not_marked = ("payload->>'dropped' IS NULL" if connection.vendor == "postgresql"
                          else "json_extract(payload, '$.dropped') IS NULL")
            # Counted from what the DELETE removed, not a count before it: a span claimed meanwhile
            # by a root's assembly is not an orphan.
            cursor.execute(f"DELETE FROM {_SPAN_TABLE} WHERE received_at < %s AND payload IS NOT NULL "
                           f"AND {not_marked} RETURNING received_at", [cutoff])
            for (received_at,) in cursor.fetchall():
                if isinstance(received_at, str):
                    received_at = parse_datetime(received_at)
                if timezone.is_naive(received_at):
                    received_at = timezone.make_aware(received_at, dt_timezone.utc)
                orphans[_hour(received_at)] += 1
        _record_corrections(orphans, "orphan")
        deleted, _ = OtlpSpan.objects.filter(received_at__lt=cutoff).delete()
    return deleted + sum(orphans.values())
