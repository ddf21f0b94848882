"""Building AgentTrace and ToolCall rows from OpenTelemetry spans, and merging late spans into them.

services.py decides which spans of an export make a new trace (its root arrived) and which join a
trace that exists; this module turns them into rows: `build_trace` maps a root and its children to
a trace (metadata, usage, the per-trace caps), `insert_traces` stores new traces through the
ingestion writer, and `merge_into_trace` places late tool calls between their neighbours by start
time under the trace's row lock (see services.py for the whole protocol).
"""

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from apps.traces import fastpath
from apps.traces.costs import NO_MODEL, NOTHING, PriceBookOnce, stored, stored_cost, summed_calls, trace_cost
from apps.traces.models import AgentTrace, ToolCall
from apps.traces.spend import SpendChanges

from ..writer import tool_calls_insert, traces_insert
from .mapping import SpanRecord

_CALL_TABLE = ToolCall._meta.db_table
_MAX_SESSION_ID = 255
# ToolCall.seq is a PositiveIntegerField: an integer column on PostgreSQL.
_SEQ_LIMIT = 2**31 - 1
# Models kept apart in a trace's usage_by_model; the spans of any further model are counted under ""
# (unpriced). Every model a span names is client input: without a bound, one trace could make its
# metadata (read back with every trace) as large as its spans. Fifty is far beyond what an agent
# calls in one trace.
MAX_MODELS_PER_TRACE = 50


def _seq_gap(count: int = 0) -> int:
    """The distance between consecutive seqs of a freshly numbered trace. Twice (cap + 2) gaps fit
    below the column's limit: a renumbering first moves the rows above the highest seq."""
    most = max(int(settings.EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE), count)
    return max(1, min(1 << 16, _SEQ_LIMIT // (2 * (most + 2))))


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


def _counted(records: list[SpanRecord]) -> list[SpanRecord]:
    llm = [r for r in records if r.kind == "llm"]
    # Agent spans often repeat the usage of the model calls under them: counted only without any.
    return llm or [r for r in records if r.input_tokens is not None or r.output_tokens is not None]


def _usage(records: list[SpanRecord]) -> dict:
    counted = _counted(records)
    usage = {}
    for key in ("input_tokens", "output_tokens"):
        values = [getattr(r, key) for r in counted if getattr(r, key) is not None]
        if values:
            usage[key] = sum(values)
    return usage


def _add_usage_by_model(by_model: dict, counted: list[SpanRecord]) -> dict:
    """`by_model` ({model: {input_tokens, output_tokens, calls}}) with the spans `counted` that carry
    tokens added, each under the model it named ("" for none; beyond MAX_MODELS_PER_TRACE models, "").
    Spans without tokens are not calls to price."""
    by_model = {model: dict(usage) for model, usage in by_model.items()}
    for r in counted:
        if r.input_tokens is None and r.output_tokens is None:
            continue
        model = r.model or NO_MODEL
        if model not in by_model and len(by_model.keys() - {NO_MODEL}) >= MAX_MODELS_PER_TRACE:
            model = NO_MODEL
        usage = by_model.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "calls": 0})
        usage["input_tokens"] += r.input_tokens or 0
        usage["output_tokens"] += r.output_tokens or 0
        usage["calls"] += 1
    return by_model


def _legacy_usage_by_model(otel: dict) -> dict:
    """A trace assembled before usage_by_model, as that split: its summed tokens under its one model
    (priced as before), or under "" (unpriced, as before) when it named several; the calls the old
    rule counted. Late spans then add their models beside it without repricing the old part."""
    usage = otel.get("usage")
    if not isinstance(usage, dict) or not (usage.get("input_tokens") or usage.get("output_tokens")):
        return {}
    models = [m for m in otel.get("models") or [] if isinstance(m, str)]
    model = models[0] if len(models) == 1 else NO_MODEL
    return {
        model: {
            "input_tokens": usage.get("input_tokens") or 0,
            "output_tokens": usage.get("output_tokens") or 0,
            "calls": summed_calls(otel),
        }
    }


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
    by_model = _add_usage_by_model({}, _counted(records))
    if by_model:
        otel["usage_by_model"] = by_model
    if root.resource:
        otel["resource"] = root.resource
    spans, dropped, dropped_bytes = _bounded_spans_metadata(
        sorted(records, key=lambda r: (r.start_ns, r.span_id)), settings.EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES
    )
    if spans:
        otel["spans"] = spans
    if dropped:
        otel["spans_dropped"] = dropped
    return otel, dropped_bytes


@dataclass
class NewTrace:
    root: SpanRecord
    records: list[SpanRecord]
    tools: list[SpanRecord]
    trace: AgentTrace
    session_base: str
    # Tool spans beyond the cap, by whether they came in this request (dropped now) or waited
    # (counted as stored when they arrived: a ledger correction moves them).
    tools_dropped: list[SpanRecord] = field(default_factory=list)


def build_trace(
    root: SpanRecord, records: list[SpanRecord], *, marked: int = 0, prices: PriceBookOnce | None = None
) -> NewTrace:
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
        final_response=(_first(r.final_response for r in primary) or _first(r.final_response for r in reversed(llms))),
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
        # Every span given is stored in the trace but the tool spans beyond the cap (counted as dropped).
        ledger_units=len(records) - len(tools_dropped),
        metadata={"otel": otel},
        source=AgentTrace.Source.OTLP,
        otel_trace_id=root.trace_id,
    )
    _add_dropped(trace, {"tool_calls": len(tools_dropped), "spans": marked, "attribute_bytes": attribute_bytes})
    if "usage_by_model" in otel:
        cost = stored(trace_cost(trace, book=prices))
        trace.cost, trace.unpriced_calls = cost.amount, cost.unpriced_calls
    return NewTrace(
        root=root, records=records, tools=tools, trace=trace, session_base=session_base, tools_dropped=tools_dropped
    )


def _suffixed(base: str, trace_id: str) -> str:
    return f"{base[: _MAX_SESSION_ID - 33]}-{trace_id}"


def _assign_session_ids(new_traces: list[NewTrace]) -> None:
    """The first trace of a conversation takes its id as session_id; later ones (session_id is
    unique) get `<conversation id>-<trace id>`, the conversation id staying in their metadata."""
    wanted = [n.trace.session_id for n in new_traces]
    # One export's traces share its project; session ids are unique per project.
    projects = {n.trace.project_id for n in new_traces}
    taken = set(
        AgentTrace.objects.filter(project_id__in=projects, session_id__in=wanted).values_list("session_id", flat=True)
    )
    for n in new_traces:
        if n.trace.session_id in taken:
            n.trace.session_id = _suffixed(n.session_base, n.root.trace_id)
        taken.add(n.trace.session_id)


def _call_row(trace_pk: int, seq: int, call_id: str | None, r: SpanRecord) -> tuple:
    return (
        trace_pk,
        seq,
        call_id,
        (r.tool_name or "tool")[:255],
        r.tool_args or {},
        r.tool_result,
        not r.failed,
        r.error,
        r.start_time,
        r.duration_ms,
    )


def _tool_call_rows(new_traces: list[NewTrace]):
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


def insert_traces(new_traces: list[NewTrace], *, spend: SpendChanges) -> None:
    """Store the traces and their tool calls; their costs are added to `spend` (the caller writes it)."""
    _assign_session_ids(new_traces)
    try:
        traces_insert(traces=[n.trace for n in new_traces])
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
    tool_calls_insert(rows=_tool_call_rows(new_traces))
    for n in new_traces:
        spend.add(
            project_id=n.trace.project_id,
            day=n.trace.start_time.date(),
            before=NOTHING,
            after=stored_cost(n.trace),
        )


# --- spans arriving after their trace ------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
        # Rare (a gap used up) and bounded by the per-trace cap: one CASE … WHEN statement per batch.
        ToolCall.objects.bulk_update([ToolCall(pk=pk, seq=seq) for pk, seq in moved], ["seq"], batch_size=1000)
    return seqs


def _call_keys(trace_pk: int, *, last_only: bool = False) -> list[tuple[int, int, int]]:
    """(id, seq, start in µs) of the trace's calls in seq order (only the last one if asked)."""
    if fastpath.enabled():
        # Microseconds computed by PostgreSQL: parsing 10K timestamps in Python cost more than the query.
        return fastpath.fetch_all(
            f"SELECT id, seq, (extract(epoch FROM timestamp) * 1000000)::bigint "
            f"FROM {_CALL_TABLE} WHERE trace_id = %s "
            f"ORDER BY seq {'DESC LIMIT 1' if last_only else ''}",
            [trace_pk],
        )
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
    for attr, record_attr in (
        ("intent_detected", "intent"),
        ("resource_type", "resource_type"),
        ("operation", "operation"),
    ):
        value = _first(getattr(r, record_attr) for r in agents)
        if value and not getattr(trace, attr):
            setattr(trace, attr, value)
            changed.append(attr)
    return changed


def merge_into_trace(
    trace_pk: int,
    records: list[SpanRecord],
    *,
    spend: SpendChanges,
    prices: PriceBookOnce | None = None,
    marked: int = 0,
    fill_fields: bool = False,
) -> list[int]:
    """Merge spans into an existing trace under its row lock: tool calls placed by start time
    without moving the others, model usage and unmapped attributes joined to the metadata, the cost
    priced again and its change added to `spend` (the caller writes it). Returns the indexes (in
    `records`) of the tool spans the cap dropped."""
    trace = AgentTrace.objects.select_for_update().get(pk=trace_pk)
    indexed_tools = sorted(
        ((i, r) for i, r in enumerate(records) if r.kind == "tool"),
        key=lambda item: (item[1].start_ns, item[1].span_id),
    )
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
        used_call_ids = (
            set(ToolCall.objects.filter(trace_id=trace_pk, call_id__in=wanted).values_list("call_id", flat=True))
            if wanted
            else set()
        )
        rows = []
        for seq, r in zip(seqs, tools, strict=True):
            call_id = r.call_id
            if call_id and call_id in used_call_ids:
                call_id = f"{call_id[:200]}:{r.span_id}"
            if call_id:
                used_call_ids.add(call_id)
            rows.append(_call_row(trace_pk, seq, call_id, r))
        tool_calls_insert(rows=rows)
        trace.tool_call_count += len(tools)
    # The spans merged are stored in the trace, but those the cap refused (counted as dropped).
    trace.ledger_units += len(records) - len(refused)
    update_fields = ["tool_call_count", "ledger_units", "metadata", "updated_at"]
    if fill_fields:
        update_fields += _fill_trace_fields(trace, records)
    otel = dict(trace.metadata.get("otel") or {})
    by_model = otel.get("usage_by_model")
    if not isinstance(by_model, dict):
        # Read before this merge's models and spans join the metadata: the split the old rule priced.
        by_model = _legacy_usage_by_model(otel)
    models = list(dict.fromkeys([*otel.get("models", []), *(r.model for r in records if r.model)]))
    if models:
        otel["models"] = models
    late_llm = [r for r in records if r.kind == "llm"]
    late_usage = _usage(late_llm)
    if late_usage:
        otel["usage_by_model"] = _add_usage_by_model(by_model, late_llm)
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
    if late_usage:
        was = stored_cost(trace)
        cost = stored(trace_cost(trace, book=prices))
        trace.cost, trace.unpriced_calls = cost.amount, cost.unpriced_calls
        update_fields += ["cost", "unpriced_calls"]
        spend.add(project_id=trace.project_id, day=trace.start_time.date(), before=was, after=cost)
    trace.save(update_fields=update_fields)
    return [i for i, _ in refused]
