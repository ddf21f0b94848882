from django.db import connection

from .models import AgentTrace, ToolCall
from .rows import from_rows, select_columns

_TOOL_CALLS_SQL = (f"SELECT {select_columns(ToolCall)} FROM {ToolCall._meta.db_table} "
                   "WHERE trace_id = %s ORDER BY seq")


def trace_get(*, session_id: str) -> AgentTrace | None:
    return AgentTrace.objects.with_tool_calls().filter(session_id=session_id).first()


def trace_evaluations(*, session_id: str):
    """The agentic evaluations of a session, newest first."""
    from apps.agentic.models import AgentEvaluation

    return list(AgentEvaluation.objects.filter(session_id=session_id).order_by("-created_at", "-id"))


def trace_tool_calls(*, trace: AgentTrace) -> list[ToolCall]:
    """The trace's tool calls in seq order: what intent and complete answer with. A fixed statement
    instead of trace.tool_calls.all(), whose compilation cost more than the rows."""
    with connection.cursor() as cursor:
        cursor.execute(_TOOL_CALLS_SQL, [trace.pk])
        return from_rows(ToolCall, cursor.fetchall())
