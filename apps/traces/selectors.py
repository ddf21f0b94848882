from .models import AgentTrace


def trace_get(*, session_id: str) -> AgentTrace | None:
    return AgentTrace.objects.with_tool_calls().filter(session_id=session_id).first()
