"""The REST door: the per-step trace lifecycle (start, intent, tool calls, complete).

The lifecycle services (trace_start, trace_intent_record, trace_tool_call(s)_record,
trace_complete) are idempotent: a retry of the same call changes nothing and returns what the first
call stored; a call that would change a finished trace raises ConflictError. The contract's
positional in-process names (start_trace, record_intent, …) are the shim in `apps.traces.tracing`.

Each step is one row written by one statement on PostgreSQL (with its ledger entry), a fast path
fenced here because it is this door's protocol; bulk rows go through `writer`.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.core.errors import ConflictError, InvalidInputError, NotFoundError
from apps.core.models import project_pk
from apps.traces import fastpath
from apps.traces.ledger import Source as LedgerSource
from apps.traces.ledger import ingestion_entry_cte, ingestion_record
from apps.traces.models import AgentTrace, ToolCall
from apps.traces.rows import from_rows, select_columns

from .writer import json_text, tool_calls_create, traces_completed_announce


def not_found(session_id: str) -> NotFoundError:
    return NotFoundError(f"No trace found for session {session_id}")


def _locked_trace(project_id: int, session_id: str) -> AgentTrace:
    try:
        return AgentTrace.objects.select_for_update().get(project_id=project_id, session_id=session_id)
    except AgentTrace.DoesNotExist:
        raise not_found(session_id) from None


def _run_alone(statement):
    """Run a single-statement write so that a failure leaves everything as it was: in autocommit the
    statement is its own transaction (one round trip), inside a caller's transaction a savepoint."""
    if connection.in_atomic_block:
        with transaction.atomic():
            return statement()
    return statement()


# The ledger counts the lifecycle in records: a start, an intent, each tool call and a completion
# are one item each; an identical retry is a duplicate, a refused call (404, 409, 422) is rejected
# at the API edge (apps.traces.api.views), where it is recorded after its rollback. Each stored record
# also bumps the trace's ledger_units in the statement that writes it (the start: the column's default
# of 1), so retention knows how many to move to dropped ("expired").
def _record_rest(project_id: int, *, stored: int = 0, duplicate: int = 0) -> None:
    ingestion_record(
        project=project_id, source=LedgerSource.REST, received=stored + duplicate, stored=stored, duplicate=duplicate
    )


_TRACE_INSERT_FIELDS = [f for f in AgentTrace._meta.concrete_fields if not f.primary_key]
# A new trace and its ledger entry in one statement, so a start stays one round trip on PostgreSQL.
_TRACE_INSERT_SQL = (
    f"WITH t AS (INSERT INTO {AgentTrace._meta.db_table} ({', '.join(f.column for f in _TRACE_INSERT_FIELDS)}) "
    f"VALUES ({', '.join(['%s'] * len(_TRACE_INSERT_FIELDS))}) RETURNING {select_columns(AgentTrace)}), "
    f"{ingestion_entry_cte(source=LedgerSource.REST, project='t.project_id', rows_from='t', at='%s')} SELECT * FROM t"
)


def _insert_started(trace: AgentTrace) -> AgentTrace:
    if not fastpath.enabled():
        with transaction.atomic():
            trace.save(force_insert=True)
            _record_rest(trace.project_id, stored=1)
        return trace
    params = [f.get_db_prep_save(f.pre_save(trace, True), connection) for f in _TRACE_INSERT_FIELDS]

    def execute():
        return fastpath.fetch_all(_TRACE_INSERT_SQL, [*params, timezone.now()])

    return from_rows(AgentTrace, _run_alone(execute))[0]


def trace_start(
    *,
    session_id: str,
    user_query: str,
    agent_name: str,
    metadata: dict | None = None,
    project_id: int | None = None,
) -> tuple[AgentTrace, bool]:
    """Open a trace in the project (`default` if None). Returns (trace, created); starting the same
    session again with the same query and agent is a no-op, with different ones a conflict."""
    metadata = metadata or {}
    project_id = project_pk(project_id)
    try:
        # Insert first: a new session is the common case, and one INSERT on its own is one round trip.
        return (
            _insert_started(
                AgentTrace(
                    project_id=project_id,
                    session_id=session_id,
                    user_query=user_query,
                    agent_name=agent_name,
                    metadata=metadata,
                )
            ),
            True,
        )
    except IntegrityError:
        # A retry, or a concurrent start of the same session that won the race: judge against what it stored.
        existing = AgentTrace.objects.get(project_id=project_id, session_id=session_id)
    if existing.user_query != user_query or existing.agent_name != agent_name:
        raise ConflictError(f"Session {session_id} already exists with a different user_query or agent_name")
    if metadata and existing.metadata != metadata:
        raise ConflictError(f"Session {session_id} already exists with different metadata")
    _record_rest(project_id, duplicate=1)
    return existing, False


def _update_active_trace(
    project_id: int,
    session_id: str,
    set_sql: str,
    params: list,
    *,
    same_sql: str | None = None,
    same_params: tuple = (),
) -> AgentTrace | None:
    """The hot path of intent and complete on PostgreSQL: one UPDATE … RETURNING of an active trace,
    which takes the row lock itself, instead of BEGIN, SELECT … FOR UPDATE, UPDATE, COMMIT, and
    appends its ledger entry in the same statement. Returns None when no active trace has that
    session_id; the caller's locked path then answers (an identical retry on a finished trace, 404
    or 409). `same_sql`, a condition on the trace's columns before the update, tells a retry that
    changes nothing (a ledger duplicate) from a write. The trace's ledger_units gain what the entry
    counts as stored, in the same UPDATE."""
    if not fastpath.enabled():
        return None
    table = AgentTrace._meta.db_table
    before, rows_from, stored, duplicate, joined = "", "t", "1", "0", ""
    if same_sql:
        # Every part of one statement reads the same snapshot: `old` sees the row as it was before the
        # UPDATE. The UPDATE joins it too, so the trace's units and the ledger entry count the same.
        session = "project_id = %s AND session_id = %s"
        before = f"old AS (SELECT id AS old_id, ({same_sql}) AS same FROM {table} WHERE {session}), "
        rows_from = "t JOIN old ON old.old_id = t.id"
        stored, duplicate = "CASE WHEN old.same THEN 0 ELSE 1 END", "CASE WHEN old.same THEN 1 ELSE 0 END"
        joined = " FROM old"
    ledger_cte = ingestion_entry_cte(
        source=LedgerSource.REST,
        project="t.project_id",
        rows_from=rows_from,
        at="%s",
        stored=stored,
        duplicate=duplicate,
    )
    sql = (
        f"WITH {before}t AS (UPDATE {table} SET {set_sql}, ledger_units = {table}.ledger_units + {stored}, "
        f"updated_at = %s{joined} "
        f"WHERE {'old.old_id = id AND ' if same_sql else ''}project_id = %s AND session_id = %s AND status = %s "
        f"RETURNING {select_columns(AgentTrace, table)}), "
        f"{ledger_cte} "
        f"SELECT * FROM t"
    )
    now = timezone.now()
    before_params = [*same_params, project_id, session_id] if same_sql else []

    def execute():
        return fastpath.fetch_all(
            sql, [*before_params, *params, now, project_id, session_id, AgentTrace.Status.ACTIVE, now]
        )

    # A cursor and from_rows rather than objects.raw(), which re-derives columns and converters per call.
    rows = from_rows(AgentTrace, _run_alone(execute))
    return rows[0] if rows else None


def trace_intent_record(
    *,
    session_id: str,
    intent: str,
    resource_type: str | None,
    operation: str | None,
    project_id: int | None = None,
) -> AgentTrace:
    """Set the detected intent. While the trace is active a later call may refine it."""
    project_id = project_pk(project_id)
    trace = _update_active_trace(
        project_id,
        session_id,
        "intent_detected = %s, resource_type = %s, operation = %s",
        [intent, resource_type, operation],
        same_sql="intent_detected IS NOT DISTINCT FROM %s AND resource_type IS NOT DISTINCT "
        "FROM %s AND operation IS NOT DISTINCT FROM %s",
        same_params=(intent, resource_type, operation),
    )
    if trace is not None:
        return trace
    return _intent_record_locked(project_id, session_id, intent, resource_type, operation)


@transaction.atomic
def _intent_record_locked(
    project_id: int, session_id: str, intent: str, resource_type: str | None, operation: str | None
) -> AgentTrace:
    trace = _locked_trace(project_id, session_id)
    unchanged = (trace.intent_detected, trace.resource_type, trace.operation) == (intent, resource_type, operation)
    if unchanged:
        _record_rest(project_id, duplicate=1)
        return trace
    if trace.is_finished:
        raise ConflictError(f"Trace {session_id} is {trace.status}; its intent can no longer change")
    trace.intent_detected, trace.resource_type, trace.operation = intent, resource_type, operation
    trace.ledger_units += 1
    trace.save(update_fields=["intent_detected", "resource_type", "operation", "ledger_units", "updated_at"])
    _record_rest(project_id, stored=1)
    return trace


@dataclass(frozen=True)
class ToolCallInput:
    tool_name: str
    tool_args: dict = field(default_factory=dict)
    tool_result: Any = None
    success: bool = True
    error: str | None = None
    duration_ms: float | None = None
    call_id: str | None = None
    timestamp: datetime | None = None

    def matches(self, call: ToolCall) -> bool:
        return (
            call.tool_name == self.tool_name
            and call.tool_args == self.tool_args
            and call.tool_result == self.tool_result
            and call.success == self.success
            and (call.error or None) == (self.error or None)
        )


def trace_tool_call_record(
    *,
    session_id: str,
    tool_name: str,
    tool_args: dict | None,
    tool_result: Any,
    success: bool = True,
    error: str | None = None,
    duration_ms: float | None = None,
    call_id: str | None = None,
    timestamp: datetime | None = None,
    project_id: int | None = None,
) -> ToolCall:
    call = ToolCallInput(
        tool_name=tool_name,
        tool_args=tool_args or {},
        tool_result=tool_result,
        success=success,
        error=error,
        duration_ms=duration_ms,
        call_id=call_id,
        timestamp=timestamp,
    )
    return trace_tool_calls_record(session_id=session_id, calls=[call], project_id=project_id)[0][0]


def repeated_call_id(calls: list[ToolCallInput]) -> str | None:
    seen: set[str] = set()
    for call in calls:
        if call.call_id:
            if call.call_id in seen:
                return call.call_id
            seen.add(call.call_id)
    return None


def trace_tool_calls_record(
    *, session_id: str, calls: list[ToolCallInput], project_id: int | None = None
) -> list[tuple[ToolCall, bool]]:
    """Append calls in order under the trace's row lock, so concurrent writers get distinct,
    gap-free seq numbers. A call whose call_id is already stored is returned, not re-inserted.
    Returns (tool_call, created) per input. One call on PostgreSQL (agents reporting each call as it
    happens) is first tried as one statement, with the same outcome."""
    project_id = project_pk(project_id)
    if len(calls) == 1 and fastpath.enabled():
        stored = _append_in_one_statement(project_id, session_id, calls[0])
        if stored is not None:
            return [(stored, True)]
    return _tool_calls_record_locked(project_id, session_id, calls)


@transaction.atomic
def _tool_calls_record_locked(
    project_id: int, session_id: str, calls: list[ToolCallInput]
) -> list[tuple[ToolCall, bool]]:
    trace = _locked_trace(project_id, session_id)
    call_ids = [c.call_id for c in calls if c.call_id]
    repeated = repeated_call_id(calls)
    if repeated:
        raise InvalidInputError(f"call_id {repeated!r} appears more than once in one request; call_ids must be unique")
    stored = {tc.call_id: tc for tc in trace.tool_calls.filter(call_id__in=call_ids)} if call_ids else {}

    outcome: list[tuple[ToolCall, bool]] = []
    to_insert: list[ToolCall] = []
    for call in calls:
        previous = stored.get(call.call_id) if call.call_id else None
        if previous is not None:
            if not call.matches(previous):
                raise ConflictError(f"Tool call {call.call_id} was already recorded with different content")
            outcome.append((previous, False))
            continue
        if trace.is_finished:
            raise ConflictError(f"Trace {session_id} is {trace.status}; no tool calls can be added")
        trace.tool_call_count += 1
        row = ToolCall(
            trace=trace,
            seq=trace.tool_call_count,
            call_id=call.call_id,
            tool_name=call.tool_name,
            tool_args=call.tool_args,
            tool_result=call.tool_result,
            success=call.success,
            error=call.error,
            duration_ms=call.duration_ms,
            timestamp=call.timestamp or timezone.now(),
        )
        to_insert.append(row)
        outcome.append((row, True))
    if to_insert:
        tool_calls_create(calls=to_insert)
        trace.ledger_units += len(to_insert)
        trace.save(update_fields=["tool_call_count", "ledger_units", "updated_at"])
    _record_rest(project_id, stored=len(to_insert), duplicate=len(calls) - len(to_insert))
    return outcome


# One tool call in one statement: the UPDATE takes the trace's row lock and bumps the count, the
# INSERT uses the bumped count as seq, the ledger entry counts the stored call, and all commit
# together, so seq stays distinct and gap-free exactly as under select_for_update. It only handles
# the common case: an active trace and a call_id not stored yet. Anything else matches no row (or,
# when a concurrent request stores the same call_id first, breaks the unique constraint) and goes
# through the locked path, which answers retries, 404 and 409.
_APPEND_TOOL_CALL_SQL = f"""
WITH trace AS (
    UPDATE {AgentTrace._meta.db_table} AS t
       SET tool_call_count = t.tool_call_count + 1, ledger_units = t.ledger_units + 1, updated_at = %(now)s
     WHERE t.project_id = %(project_id)s AND t.session_id = %(session_id)s AND t.status = %(active)s
       AND NOT EXISTS (SELECT 1 FROM {ToolCall._meta.db_table} AS c WHERE c.trace_id = t.id AND c.call_id = %(call_id)s)
 RETURNING t.id, t.tool_call_count
),
inserted AS (
    INSERT INTO {ToolCall._meta.db_table}
           (trace_id, seq, call_id, tool_name, tool_args, tool_result, success, error, timestamp, duration_ms)
    SELECT trace.id, trace.tool_call_count, %(call_id)s, %(tool_name)s, %(tool_args)s::jsonb, %(tool_result)s::jsonb,
           %(success)s, %(error)s, %(timestamp)s, %(duration_ms)s
      FROM trace
    RETURNING id, trace_id, seq
),
{ingestion_entry_cte(source=LedgerSource.REST, project="%(project_id)s", rows_from="inserted", at="%(now)s")}
SELECT id, trace_id, seq FROM inserted
"""


def _append_in_one_statement(project_id: int, session_id: str, call: ToolCallInput) -> ToolCall | None:
    now = timezone.now()
    timestamp = call.timestamp or now
    params = {
        "now": now,
        "project_id": project_id,
        "session_id": session_id,
        "active": AgentTrace.Status.ACTIVE,
        "call_id": call.call_id,
        "tool_name": call.tool_name,
        "tool_args": json_text(call.tool_args),
        "tool_result": json_text(call.tool_result),
        "success": call.success,
        "error": call.error,
        "timestamp": timestamp,
        "duration_ms": call.duration_ms,
    }

    def execute():
        return fastpath.fetch_one(_APPEND_TOOL_CALL_SQL, params)

    try:
        row = _run_alone(execute)
    except IntegrityError:
        return None
    if row is None:
        return None
    pk, trace_id, seq = row
    stored = ToolCall(
        id=pk,
        trace_id=trace_id,
        seq=seq,
        call_id=call.call_id,
        tool_name=call.tool_name,
        tool_args=call.tool_args,
        tool_result=call.tool_result,
        success=call.success,
        error=call.error,
        duration_ms=call.duration_ms,
        timestamp=timestamp,
    )
    stored._state.adding, stored._state.db = False, connection.alias
    return stored


def finish_fields(trace: AgentTrace, end_time: datetime) -> None:
    trace.end_time = end_time
    trace.duration_seconds = max((end_time - trace.start_time).total_seconds(), 0.0)


def trace_complete(
    *,
    session_id: str,
    final_response: str | None,
    success: bool,
    error: str | None = None,
    project_id: int | None = None,
) -> AgentTrace:
    project_id = project_pk(project_id)
    status = AgentTrace.Status.COMPLETED if success else AgentTrace.Status.FAILED
    end_time = timezone.now()
    trace = _update_active_trace(
        project_id,
        session_id,
        "final_response = %s, success = %s, error = %s, status = %s, end_time = %s,"
        " duration_seconds = GREATEST(EXTRACT(EPOCH FROM (%s - start_time)), 0)",
        [final_response, success, error, status, end_time, end_time],
    )
    if trace is not None:
        traces_completed_announce(trace_ids=[trace.pk])
        return trace
    return _complete_locked(project_id, session_id, final_response, success, error=error)


@transaction.atomic
def _complete_locked(
    project_id: int, session_id: str, final_response: str | None, success: bool, *, error: str | None = None
) -> AgentTrace:
    trace = _locked_trace(project_id, session_id)
    if trace.is_finished:
        same = (trace.final_response, trace.success, trace.error or None) == (final_response, success, error or None)
        if same:
            _record_rest(project_id, duplicate=1)
            return trace
        raise ConflictError(f"Trace {session_id} is already {trace.status}; it cannot be completed differently")
    trace.final_response = final_response
    trace.success = success
    trace.error = error
    trace.status = AgentTrace.Status.COMPLETED if success else AgentTrace.Status.FAILED
    finish_fields(trace, timezone.now())
    trace.ledger_units += 1
    # Only what completing changes: a full save rewrites (and compiles) every column, metadata included.
    trace.save(
        update_fields=[
            "final_response",
            "success",
            "error",
            "status",
            "end_time",
            "duration_seconds",
            "ledger_units",
            "updated_at",
        ]
    )
    _record_rest(project_id, stored=1)
    traces_completed_announce(trace_ids=[trace.pk])
    return trace
