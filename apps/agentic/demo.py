"""Evaluations of the demo traces, by the heuristic judge (it needs no LLM)."""

from apps.traces.demo import DEMO_TRACES

from .services import evaluate_sessions


def load_demo_evaluations() -> int:
    """Evaluate the demo traces; an unchanged trace already evaluated is reused. Returns how many were new."""
    outcome = evaluate_sessions(session_ids=[d["session_id"] for d in DEMO_TRACES], judge="heuristic")
    return sum(1 for result in outcome.evaluated if not result.reused)
