"""Judges: the deterministic heuristic judge and the LLM judge, behind one small registry.

`get_agentic_judge(None)` picks the LLM judge when an LLM is configured and the heuristic judge
otherwise (the embedded default); "heuristic" and "llm" ask for one explicitly.
"""

from apps.core.errors import InvalidInputError
from apps.core.llm.client import LLMNotConfigured, get_llm_client, llm_configured

from .base import AGENTIC_METRICS, AgenticJudge, AgenticVerdict, JudgeInput, JudgeToolCall, MetricResult, TokenUsage
from .heuristic import HeuristicAgenticJudge
from .llm_agentic import LLMAgenticJudge

JUDGE_CHOICES = ("heuristic", "llm")

__all__ = [
    "AGENTIC_METRICS",
    "AgenticJudge",
    "AgenticVerdict",
    "JUDGE_CHOICES",
    "JudgeInput",
    "JudgeToolCall",
    "MetricResult",
    "TokenUsage",
    "HeuristicAgenticJudge",
    "get_agentic_judge",
]


def get_agentic_judge(name: str | None = None) -> AgenticJudge:
    if name == "heuristic" or (name is None and not llm_configured()):
        return HeuristicAgenticJudge()
    if name not in (None, "llm"):
        raise InvalidInputError(f"Unknown judge {name!r}; choose one of {', '.join(JUDGE_CHOICES)}")
    try:
        return LLMAgenticJudge(get_llm_client())
    except LLMNotConfigured as exc:
        raise InvalidInputError(f"The LLM judge is not available: {exc.reason}") from None
