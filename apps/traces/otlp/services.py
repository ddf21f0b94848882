"""Assembling OpenTelemetry spans into AgentTrace and ToolCall rows.

Spans of one trace arrive in any order, over any number of requests, and whole batches are
retried. Every span is first recorded in OtlpSpan, keyed by (trace id, span id) with ON CONFLICT
DO NOTHING, so a span seen before is dropped there. Then, per OpenTelemetry trace:

- its AgentTrace exists (the root came earlier): the new spans are added to it under its row lock,
  tool calls renumbered by start time when a late one started before others;
- the root span is among the new spans: the AgentTrace is created, completed or failed, from the
  root, the children that waited in OtlpSpan and the children in this request;
- neither: the spans wait in OtlpSpan with their mapped content until the root arrives.

Two concurrent requests holding a root and its children cannot each miss the other: after its
commit, each request settles the traces it touched (see `_settle`). Nothing is locked across
requests, so exports that share a trace (a batch boundary cuts most traces) never wait for each other;
an identical span sent twice at once waits on the span table's primary key and is dropped.

The write path is built for throughput: per request a handful of statements whatever the number
of spans (one INSERT … SELECT FROM unnest for the spans, one bulk INSERT for traces, one COPY for
tool calls on PostgreSQL), and no ORM object per span.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import orjson
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from apps.traces.models import AgentTrace, OtlpSpan, ToolCall
from apps.traces.services import _announce_completed, json_text, tool_call_rows_insert

from .mapping import SpanRecord

_SPAN_TABLE = OtlpSpan._meta.db_table
_SQLITE_ROWS_PER_INSERT = 200
_MAX_SESSION_ID = 255


@dataclass
class IngestOutcome:
    spans_new: int = 0
    spans_duplicate: int = 0
    traces_created: list[int] = field(default_factory=list)
    traces_updated: list[int] = field(default_factory=list)
    spans_waiting: int = 0


def _bound_lock_waits() -> None:
    """PostgreSQL: a row another export holds (the same span sent twice at once, a trace being
    renumbered) is waited for at most EVALSITE_OTLP_LOCK_TIMEOUT_MS; then OperationalError, which
    the view answers 503 with Retry-After, rather than holding the exporter until it times out."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = {int(settings.EVALSITE_OTLP_LOCK_TIMEOUT_MS)}")


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
            cursor.execute(
                f"WITH input AS (SELECT t, s, p FROM {values[0]} AS u(t, s, p)), "
                f"inserted AS (INSERT INTO {_SPAN_TABLE} (otel_trace_id, span_id, received_at, payload) "
                "SELECT t, s, %s, p::jsonb FROM input ON CONFLICT DO NOTHING RETURNING otel_trace_id, span_id) "
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


def _claim_waiting(trace_ids, *, created_only: bool = False) -> dict[str, list[SpanRecord]]:
    """Take the spans stored earlier for these traces that still wait for their root. Clearing the
    payload is the claim: of two requests settling the same trace, only one gets each span.
    `created_only`: only for those of the traces that have an AgentTrace by now."""
    if not trace_ids:
        return {}
    trace_ids = list(trace_ids)
    waiting: dict[str, list[SpanRecord]] = defaultdict(list)
    with connection.cursor() as cursor:
        for start in range(0, len(trace_ids), _SQLITE_ROWS_PER_INSERT):
            chunk = trace_ids[start:start + _SQLITE_ROWS_PER_INSERT]
            in_list = f"({', '.join(['%s'] * len(chunk))})"
            if created_only:
                in_list = f"(SELECT otel_trace_id FROM {AgentTrace._meta.db_table} WHERE otel_trace_id IN {in_list})"
            select = (f"SELECT otel_trace_id, span_id, payload FROM {_SPAN_TABLE} "
                      f"WHERE payload IS NOT NULL AND otel_trace_id IN {in_list}")
            if connection.vendor == "postgresql":
                # RETURNING shows the new (cleared) payload: the old one comes from the locked subquery.
                cursor.execute(f"UPDATE {_SPAN_TABLE} AS s SET payload = NULL FROM ({select} FOR UPDATE) AS old "
                               "WHERE s.otel_trace_id = old.otel_trace_id AND s.span_id = old.span_id "
                               "RETURNING old.otel_trace_id, old.span_id, old.payload", chunk)
                rows = cursor.fetchall()
            else:
                # SQLite runs one writing transaction at a time: read, then clear, is already atomic.
                cursor.execute(select, chunk)
                rows = cursor.fetchall()
                cursor.execute(f"UPDATE {_SPAN_TABLE} SET payload = NULL "
                               f"WHERE payload IS NOT NULL AND otel_trace_id IN {in_list}", chunk)
            for trace_id, _span_id, payload in rows:
                waiting[trace_id].append(SpanRecord.from_payload(
                    orjson.loads(payload) if isinstance(payload, (str, bytes)) else payload))
    return waiting


# --- building a trace ----------------------------------------------------------------------------

def _first(values):
    return next((v for v in values if v), None)


def _bounded_spans_metadata(records: list[SpanRecord]) -> tuple[list[dict], int]:
    """The unmapped attributes of the spans, as much as EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES allows."""
    budget = settings.EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES
    kept, dropped, size = [], 0, 0
    for r in records:
        if not r.attributes:
            continue
        entry = {"span_id": r.span_id, "name": r.name, "kind": r.kind, "attributes": r.attributes}
        size += len(orjson.dumps(entry, default=str))
        if size > budget:
            dropped += 1
            continue
        kept.append(entry)
    return kept, dropped


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


def _otel_metadata(root: SpanRecord, records: list[SpanRecord], conversation_id: str | None) -> dict:
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
    spans, dropped = _bounded_spans_metadata(sorted(records, key=lambda r: (r.start_ns, r.span_id)))
    if spans:
        otel["spans"] = spans
    if dropped:
        otel["spans_dropped"] = dropped
    return otel


@dataclass
class _NewTrace:
    root: SpanRecord
    records: list[SpanRecord]
    tools: list[SpanRecord]
    trace: AgentTrace
    session_base: str


def _build_trace(root: SpanRecord, records: list[SpanRecord]) -> _NewTrace:
    by_start = sorted(records, key=lambda r: (r.start_ns, r.span_id))
    agents = [r for r in by_start if r.kind == "agent" and r is not root]
    llms = [r for r in by_start if r.kind == "llm" and r is not root]
    primary = [root, *agents]
    conversation = _first(r.conversation_id for r in primary) or _first(r.session_key for r in primary)
    session_base = conversation or f"otel_{root.trace_id}"
    tools = [r for r in by_start if r.kind == "tool" and r is not root]
    start, end = root.start_time, root.end_time
    failed = root.failed
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
        metadata={"otel": _otel_metadata(root, records, conversation)},
        source=AgentTrace.Source.OTLP,
        otel_trace_id=root.trace_id,
    )
    return _NewTrace(root=root, records=records, tools=tools, trace=trace, session_base=session_base)


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


def _tool_call_rows(new_traces: list[_NewTrace]):
    for n in new_traces:
        seen_call_ids: set[str] = set()
        for seq, r in enumerate(n.tools, start=1):
            call_id = r.call_id
            if call_id is not None:
                # (trace, call_id) is unique: a tool call id repeated within a trace keeps its span apart.
                if call_id in seen_call_ids:
                    call_id = f"{call_id[:200]}:{r.span_id}"
                seen_call_ids.add(call_id)
            yield (n.trace.pk, seq, call_id, (r.tool_name or "tool")[:255], r.tool_args or {}, r.tool_result,
                   not r.failed, r.error, r.start_time, r.duration_ms)


_TRACE_COPY_FIELDS = list(AgentTrace._meta.concrete_fields)
_TRACE_JSON_FIELDS = {f.attname for f in _TRACE_COPY_FIELDS if f.get_internal_type() == "JSONField"}


def _copy_traces(traces: list[AgentTrace]) -> None:
    """PostgreSQL: ids reserved from the sequence, rows streamed by COPY (bulk_create adapts every
    value of every field through the ORM, a tenth of the request's CPU)."""
    now = timezone.now()
    with connection.wrap_database_errors, connection.cursor() as cursor:
        cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{AgentTrace._meta.db_table}', 'id')) "
                       "FROM generate_series(1, %s)", [len(traces)])
        for trace, (pk,) in zip(traces, cursor.fetchall(), strict=True):
            trace.pk = pk
            trace.created_at = trace.updated_at = now
        columns = ", ".join(f.column for f in _TRACE_COPY_FIELDS)
        with cursor.cursor.copy(f"COPY {AgentTrace._meta.db_table} ({columns}) FROM STDIN") as copy:
            for trace in traces:
                copy.write_row([json_text(getattr(trace, f.attname)) if f.attname in _TRACE_JSON_FIELDS
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

def _add_late_spans(trace_pk: int, records: list[SpanRecord]) -> None:
    """Spans of a trace that already exists: tool calls go in start-time order (renumbering the
    ones that started later), model usage and unmapped attributes join the metadata."""
    trace = AgentTrace.objects.select_for_update().get(pk=trace_pk)
    tools = sorted((r for r in records if r.kind == "tool"), key=lambda r: (r.start_ns, r.span_id))
    if tools:
        existing = list(trace.tool_calls.order_by("seq"))
        used_call_ids = {c.call_id for c in existing if c.call_id}
        merged: list[tuple[datetime, int, ToolCall | SpanRecord]] = [
            (c.timestamp, 0, c) for c in existing] + [(r.start_time, 1, r) for r in tools]
        # Stable: a late call with the same start time as a stored one goes after it.
        merged.sort(key=lambda item: (item[0], item[1]))
        moved, fresh = [], []
        for seq, (_, _, item) in enumerate(merged, start=1):
            if isinstance(item, ToolCall):
                if item.seq != seq:
                    item.seq = seq
                    moved.append(item)
                continue
            call_id = item.call_id
            if call_id and call_id in used_call_ids:
                call_id = f"{call_id[:200]}:{item.span_id}"
            if call_id:
                used_call_ids.add(call_id)
            fresh.append(ToolCall(trace=trace, seq=seq, call_id=call_id, tool_name=(item.tool_name or "tool")[:255],
                                  tool_args=item.tool_args or {}, tool_result=item.tool_result, success=not item.failed,
                                  error=item.error, timestamp=item.start_time, duration_ms=item.duration_ms))
        if moved:
            # (trace, seq) is unique and not deferrable: move the shifted rows out of the way first.
            offset = len(merged) + max(c.seq for c in existing)
            ToolCall.objects.filter(pk__in=[c.pk for c in moved]).update(seq=F("seq") + offset)
            ToolCall.objects.bulk_update(moved, ["seq"])
        ToolCall.objects.bulk_create(fresh)
        trace.tool_call_count = len(merged)
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
    spans, dropped = _bounded_spans_metadata(records)
    if spans or dropped:
        room = settings.EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES - len(orjson.dumps(otel.get("spans", []), default=str))
        kept = []
        for entry in spans:
            room -= len(orjson.dumps(entry, default=str))
            if room < 0:
                dropped += 1
            else:
                kept.append(entry)
        otel["spans"] = [*otel.get("spans", []), *kept]
        if dropped:
            otel["spans_dropped"] = otel.get("spans_dropped", 0) + dropped
    trace.metadata = {**trace.metadata, "otel": otel}
    trace.save(update_fields=["tool_call_count", "metadata", "updated_at"])


# --- the entry point -----------------------------------------------------------------------------

def otlp_spans_ingest(*, records: list[SpanRecord], rejected: dict[str, int] | None = None) -> IngestOutcome:
    """Store the spans of one export request (already mapped), assembling traces as their roots arrive."""
    outcome = IngestOutcome()
    if not records:
        return outcome
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for r in records:
        by_trace[r.trace_id].append(r)
    now = timezone.now()
    waiting_traces: set[str] = set()
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

        new_traces: list[_NewTrace] = []
        to_assemble = [t for t in with_root if any((t, r.span_id) in new_keys and r.is_root for r in by_trace[t])]
        waiting = _claim_waiting(to_assemble)
        for trace_id, group in by_trace.items():
            fresh = [r for r in group if (trace_id, r.span_id) in new_keys]
            if not fresh:
                continue
            if trace_id in known:
                _add_late_spans(known[trace_id], fresh)
                outcome.traces_updated.append(known[trace_id])
            elif trace_id in to_assemble:
                stored = waiting.get(trace_id, [])
                fresh_ids = {r.span_id for r in fresh}
                records_of_trace = fresh + [r for r in stored if r.span_id not in fresh_ids]
                roots = sorted((r for r in fresh if r.is_root), key=lambda r: (r.start_ns, r.span_id))
                new_traces.append(_build_trace(roots[0], records_of_trace))
            else:
                outcome.spans_waiting += len(fresh)
                waiting_traces.add(trace_id)
        if new_traces:
            _insert_traces(new_traces)
            outcome.traces_created = [n.trace.pk for n in new_traces]
            _announce_completed(outcome.traces_created)
    settle = waiting_traces | {n.root.trace_id for n in new_traces}
    if settle:
        outcome.traces_updated += _settle(settle)
    return outcome


def _settle(trace_ids: set[str]) -> list[int]:
    """After commit: children a concurrent request stored while this one created their trace (or the
    trace a concurrent request created while this one stored children) are applied now. Each side
    checks after its own commit, so whichever commits last sees the other's rows; no lock is held
    across requests, and two exports sharing a trace never wait for each other."""
    with transaction.atomic():
        _bound_lock_waits()
        claimed = _claim_waiting(trace_ids, created_only=True)
        if not claimed:
            return []
        known = dict(AgentTrace.objects.filter(otel_trace_id__in=list(claimed)).values_list("otel_trace_id", "pk"))
        for trace_id, late in claimed.items():
            _add_late_spans(known[trace_id], late)
    return [known[t] for t in claimed]


def otlp_spans_prune(*, older_than) -> int:
    """Forget span ids older than the retry window; spans still waiting for a root that never came
    are dropped with them. Returns how many rows were deleted."""
    deleted, _ = OtlpSpan.objects.filter(received_at__lt=timezone.now() - older_than).delete()
    return deleted
