"""Demo evaluations for `make run`: the demo traces judged by the heuristic judge."""

from apps.traces.demo import DEMO_TRACES
from apps.traces.models import AgentTrace

from . import services
from .judges import HeuristicAgenticJudge


def load_demo_evaluations() -> int:
    """Evaluate the demo traces; an unchanged trace already evaluated keeps its evaluation.
    Returns how many evaluations were new."""
    traces = list(AgentTrace.objects.with_tool_calls().filter(session_id__in=[d["session_id"] for d in DEMO_TRACES]))
    outcomes = services.evaluations_create_for_traces(traces=traces, judge=HeuristicAgenticJudge())
    return sum(not o.reused for o in outcomes)
