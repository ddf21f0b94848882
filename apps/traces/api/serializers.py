"""Model → JSON for the trace API, in the contract's field names."""

from apps.traces.models import AgentTrace, ToolCall


def tool_call_data(call: ToolCall) -> dict:
    return {
        "seq": call.seq,
        "call_id": call.call_id,
        "tool_name": call.tool_name,
        "tool_args": call.tool_args,
        "tool_result": call.tool_result,
        "timestamp": call.timestamp,
        "success": call.success,
        "error": call.error,
        "duration_ms": call.duration_ms,
    }


def trace_data(trace: AgentTrace, tool_calls=None) -> dict:
    calls = tool_calls if tool_calls is not None else trace.tool_calls.all()
    return {
        "session_id": trace.session_id,
        "user_query": trace.user_query,
        "agent_name": trace.agent_name,
        "intent_detected": trace.intent_detected,
        "resource_type": trace.resource_type,
        "operation": trace.operation,
        "tool_calls": [tool_call_data(c) for c in calls],
        "final_response": trace.final_response,
        "success": trace.success,
        "status": trace.status,
        "error": trace.error,
        "start_time": trace.start_time,
        "end_time": trace.end_time,
        "metadata": trace.metadata,
        "source": trace.source,
    }
