"""Model → JSON for the trace API, in the contract's field names."""

from collections.abc import Callable
from urllib.parse import urlencode

from django.urls import reverse

from apps.traces import selectors
from apps.traces.models import AgentTrace, ToolCall
from apps.traces.selectors import ToolCallPage


def tool_call_data(call: ToolCall) -> dict:
    """`seq` is the call's position in its trace, not the stored order key (which may have gaps); a
    call recorded through the REST per-step endpoints has its position as its key."""
    return {
        "seq": getattr(call, "position", call.seq),
        "call_id": call.call_id,
        "tool_name": call.tool_name,
        "tool_args": call.tool_args,
        "tool_result": call.tool_result,
        "timestamp": call.timestamp,
        "success": call.success,
        "error": call.error,
        "duration_ms": call.duration_ms,
    }


def tool_calls_next_url(trace: AgentTrace, page: ToolCallPage, limit: int | None = None,
                        absolute: Callable[[str], str] = str) -> str | None:
    if page.next_after is None:
        return None
    query = {"after": page.next_after, **({"limit": limit} if limit else {})}
    return absolute(f"{reverse('trace-tool-call-page', args=[trace.session_id])}?{urlencode(query)}")


def _first_page(calls: list[ToolCall]) -> ToolCallPage:
    # The write answers (intent, complete) hand over every call; they answer with the first page too.
    calls = list(calls)
    size = selectors.tool_call_page_size()
    for position, call in enumerate(calls, start=1):
        call.position = position
    shown = calls[:size]
    return ToolCallPage(calls=shown, total=len(calls), next_after=shown[-1].seq if len(calls) > size else None)


def trace_data(trace: AgentTrace, tool_calls=None, *, page: ToolCallPage | None = None,
               absolute: Callable[[str], str] = str) -> dict:
    """The trace with the first page of its tool calls (`page`, else read here, or made from a
    given list of all of them). `absolute` turns the next page's path into a full URL."""
    if page is None:
        page = _first_page(tool_calls) if tool_calls is not None else selectors.trace_tool_call_page(trace=trace)
    return {
        "session_id": trace.session_id,
        "user_query": trace.user_query,
        "agent_name": trace.agent_name,
        "intent_detected": trace.intent_detected,
        "resource_type": trace.resource_type,
        "operation": trace.operation,
        "tool_calls": [tool_call_data(c) for c in page.calls],
        "tool_calls_total": page.total,
        "tool_calls_next": tool_calls_next_url(trace, page, absolute=absolute),
        "final_response": trace.final_response,
        "success": trace.success,
        "status": trace.status,
        "error": trace.error,
        "start_time": trace.start_time,
        "end_time": trace.end_time,
        "metadata": trace.metadata,
        "source": trace.source,
        "truncated": trace.truncated,
        "dropped": trace.dropped or {},
    }
