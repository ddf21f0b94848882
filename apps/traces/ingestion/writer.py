"""The one writer of new AgentTrace and ToolCall rows, which every door calls.

The doors decide what to store (rest.py: the per-step lifecycle; batch.py: whole traces;
otlp/: OpenTelemetry spans assembled into traces); this module stores it, in the caller's
transaction, the fastest way the database allows, and tells listeners which traces finished:

- `traces_insert`: new traces, with their primary keys set on the objects;
- `tool_calls_insert`: tool calls given as rows in TOOL_CALL_COLUMNS order (bulk: batch, OTLP);
- `tool_calls_create`: a request's few tool calls as ToolCall objects, keys set (REST);
- `traces_completed_announce`: after commit, the trace_completed signal (online evaluation).

The REST lifecycle's single-row fast paths (one statement per start, intent, tool call or
completion, with its ledger entry) stay in rest.py: they are that door's protocol, not bulk writes.
"""

import orjson
from django.db import transaction
from django.db.models import JSONField
from django.utils import timezone

from apps.traces import fastpath
from apps.traces.models import AgentTrace, ToolCall
from apps.traces.signals import trace_completed

TOOL_CALL_COLUMNS = (
    "trace_id",
    "seq",
    "call_id",
    "tool_name",
    "tool_args",
    "tool_result",
    "success",
    "error",
    "timestamp",
    "duration_ms",
)

_TRACE_TABLE = AgentTrace._meta.db_table
_TRACE_COPY_FIELDS = list(AgentTrace._meta.concrete_fields)


def json_text(value) -> str | None:
    # SQL NULL for a missing result, as the ORM stores JSONField(null=True) None.
    return None if value is None else orjson.dumps(value).decode()


def _traces_copy(traces: list[AgentTrace]) -> None:
    """PostgreSQL: ids reserved from the sequence, rows streamed by COPY (bulk_create adapts every
    value of every field through the ORM, a tenth of an OTLP request's CPU)."""
    now = timezone.now()
    ids = fastpath.fetch_all(
        f"SELECT nextval(pg_get_serial_sequence('{_TRACE_TABLE}', 'id')) FROM generate_series(1, %s)", [len(traces)]
    )
    for trace, (pk,) in zip(traces, ids, strict=True):
        trace.pk = pk
        trace.created_at = trace.updated_at = now
    columns = ", ".join(f.column for f in _TRACE_COPY_FIELDS)
    fastpath.copy_rows(
        f"COPY {_TRACE_TABLE} ({columns}) FROM STDIN",
        (
            [
                json_text(getattr(trace, f.attname)) if isinstance(f, JSONField) else getattr(trace, f.attname)
                for f in _TRACE_COPY_FIELDS
            ]
            for trace in traces
        ),
    )


def traces_insert(*, traces: list[AgentTrace]) -> list[AgentTrace]:
    """Insert new traces (unsaved AgentTrace objects) inside the caller's transaction and set their
    primary keys. A session_id already stored raises IntegrityError and stores none of them, so the
    caller can settle each on its own. COPY on PostgreSQL is a fenced fast path (see _traces_copy)."""
    if not traces:
        return traces
    with transaction.atomic():
        if fastpath.enabled():
            _traces_copy(traces)
        else:
            AgentTrace.objects.bulk_create(traces, batch_size=1000)
    return traces


def tool_calls_insert(*, rows) -> None:
    """Store tool calls given as tuples in TOOL_CALL_COLUMNS order (tool_args and tool_result as
    Python values), inside the caller's transaction."""
    if fastpath.enabled():
        # COPY inside the current transaction: adapting tens of thousands of INSERT parameters
        # costs several times more than streaming the rows.
        fastpath.copy_rows(
            f"COPY {ToolCall._meta.db_table} ({', '.join(TOOL_CALL_COLUMNS)}) FROM STDIN",
            ((*row[:4], json_text(row[4]), json_text(row[5]), *row[6:]) for row in rows),
        )
    else:
        ToolCall.objects.bulk_create(
            [ToolCall(**dict(zip(TOOL_CALL_COLUMNS, row, strict=False))) for row in rows], batch_size=500
        )


def tool_calls_create(*, calls: list[ToolCall]) -> list[ToolCall]:
    """Insert tool calls given as unsaved ToolCall objects and set their primary keys (the REST door
    answers with the stored calls). Few at a time: bulk rows go through tool_calls_insert."""
    return ToolCall.objects.bulk_create(calls)


def traces_completed_announce(*, trace_ids: list[int]) -> None:
    """Tell listeners (online evaluation rules) which traces just finished, once their rows are
    committed: a listener that queues work must never see a trace its worker cannot read yet.
    Registered inside the caller's atomic block, so a write that rolls back announces nothing."""
    if trace_ids and trace_completed.receivers:
        ids = list(trace_ids)
        transaction.on_commit(lambda: trace_completed.send(sender=AgentTrace, trace_ids=ids))
