from .models import AgentTrace


def trace_get(*, session_id: str) -> AgentTrace | None:
    return AgentTrace.objects.with_tool_calls().filter(session_id=session_id).first()


def trace_evaluations(*, session_id: str):
    """The agentic evaluations of a session, newest first."""
    from apps.agentic.models import AgentEvaluation

    return list(AgentEvaluation.objects.filter(session_id=session_id).order_by("-created_at", "-id"))
