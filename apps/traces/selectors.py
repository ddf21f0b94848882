from django.db import connection

from apps.core.errors import NotFoundError

from .models import AgentTrace, ToolCall
from .rows import from_rows, select_columns

_TOOL_CALLS_SQL = (f"SELECT {select_columns(ToolCall)} FROM {ToolCall._meta.db_table} "
                   "WHERE trace_id = %s ORDER BY seq")


def trace_find(*, session_id: str) -> AgentTrace | None:
    return AgentTrace.objects.with_tool_calls().filter(session_id=session_id).first()


def trace_get(*, session_id: str) -> AgentTrace:
    trace = trace_find(session_id=session_id)
    if trace is None:
        raise NotFoundError(f"No trace found for session {session_id}")
    return trace


def trace_tool_call_list(*, trace: AgentTrace) -> list[ToolCall]:
    """The trace's tool calls in seq order: what intent and complete answer with. A fixed statement
    instead of trace.tool_calls.all(), whose compilation cost more than the rows."""
    with connection.cursor() as cursor:
        cursor.execute(_TOOL_CALLS_SQL, [trace.pk])
        return from_rows(ToolCall, cursor.fetchall())
