"""The contract's in-process tracing functions (seed 000, "How Tracing Works"), with its positional
signatures, so a Python agent running beside evalsite can call them exactly as documented:

    start_trace("openwebui_abc123", "List clusters in Delhi", "OrchestratorAgent")
    record_intent("openwebui_abc123", "list_k8s_cluster", "k8s_cluster", "list")
    record_tool_call("openwebui_abc123", "list_k8s_clusters", {"datacenter": "Delhi"}, [...], True)
    complete_trace("openwebui_abc123", "Found 2 clusters in Delhi...", True)

Each one only forwards to its keyword-only service in `services.py`, which holds the behaviour
(idempotent retries, ConflictError on a finished trace); code inside evalsite calls the services.
"""

from datetime import datetime
from typing import Any

from .models import AgentTrace, ToolCall
from .services import trace_complete, trace_intent_record, trace_start, trace_tool_call_record

__all__ = ["complete_trace", "record_intent", "record_tool_call", "start_trace"]


def start_trace(
    session_id: str, user_query: str, agent_name: str, metadata: dict | None = None
) -> tuple[AgentTrace, bool]:
    return trace_start(session_id=session_id, user_query=user_query, agent_name=agent_name, metadata=metadata)


def record_intent(session_id: str, intent: str, resource_type: str | None, operation: str | None) -> AgentTrace:
    return trace_intent_record(session_id=session_id, intent=intent, resource_type=resource_type, operation=operation)


def record_tool_call(
    session_id: str,
    tool_name: str,
    tool_args: dict | None,
    tool_result: Any,
    success: bool = True,
    *,
    error: str | None = None,
    duration_ms: float | None = None,
    call_id: str | None = None,
    timestamp: datetime | None = None,
) -> ToolCall:
    return trace_tool_call_record(
        session_id=session_id,
        tool_name=tool_name,
        tool_args=tool_args,
        tool_result=tool_result,
        success=success,
        error=error,
        duration_ms=duration_ms,
        call_id=call_id,
        timestamp=timestamp,
    )


def complete_trace(
    session_id: str, final_response: str | None, success: bool, *, error: str | None = None
) -> AgentTrace:
    return trace_complete(session_id=session_id, final_response=final_response, success=success, error=error)
