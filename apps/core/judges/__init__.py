"""Judges: the protocol, the score bands and the registry of agentic judges (heuristic and LLM)."""

from .bands import RATINGS, rating_for
from .base import (
    AgenticJudge,
    JudgeInput,
    JudgeToolCall,
    Judgement,
    MetricVerdict,
    MetricStatus,
    overall_score,
)
from .registry import JudgeUnavailable, get_agentic_judge

__all__ = [
    "AgenticJudge", "JudgeInput", "JudgeToolCall", "Judgement", "JudgeUnavailable", "MetricStatus",
    "MetricVerdict", "RATINGS", "get_agentic_judge", "overall_score", "rating_for",
]
