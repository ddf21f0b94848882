"""What every agentic judge takes and returns. Plain dataclasses: judges never see ORM models, so
traces, manual requests and test runs all feed them the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

# overall = 0.4 task adherence + 0.3 tool call accuracy + 0.3 intent resolution (the contract's weights).
WEIGHTS: dict[str, float] = {"task_adherence": 0.4, "tool_call_accuracy": 0.3, "intent_resolution": 0.3}
METRICS: tuple[str, ...] = tuple(WEIGHTS)


class MetricStatus(StrEnum):
    OK = "ok"
    # The metric does not apply to this interaction (e.g. no tool calls and nothing needed one).
    SKIPPED = "skipped"
    # The judge could not score it (LLM down, unusable output after retries).
    ERROR = "error"


@dataclass(frozen=True)
class JudgeToolCall:
    tool_name: str
    tool_args: dict[str, Any] = field(default_factory=dict)
    tool_result: Any = None
    success: bool = True
    error: str | None = None


@dataclass(frozen=True)
class JudgeInput:
    query: str
    final_response: str | None
    tool_calls: tuple[JudgeToolCall, ...] = ()
    intent: str | None = None
    resource_type: str | None = None
    operation: str | None = None
    agent_name: str | None = None
    # The agent's own success flag when it reported one (traces do, manual requests do not).
    success: bool | None = None

    def canonical(self) -> dict:
        """A stable JSON-able form, hashed to recognise an unchanged trace."""
        return {
            "query": self.query,
            "final_response": self.final_response,
            "intent": self.intent,
            "resource_type": self.resource_type,
            "operation": self.operation,
            "agent_name": self.agent_name,
            "success": self.success,
            "tool_calls": [
                {"tool_name": c.tool_name, "tool_args": c.tool_args, "tool_result": c.tool_result,
                 "success": c.success, "error": c.error}
                for c in self.tool_calls
            ],
        }


@dataclass
class MetricVerdict:
    status: MetricStatus
    score: float | None = None
    reasoning: str = ""

    def __post_init__(self):
        if self.status == MetricStatus.OK:
            if self.score is None or not 0.0 <= self.score <= 1.0:
                raise ValueError(f"an ok verdict needs a score in 0..1, got {self.score!r}")
        elif self.score is not None:
            raise ValueError(f"a {self.status} verdict carries no score")

    @classmethod
    def ok(cls, score: float, reasoning: str) -> MetricVerdict:
        return cls(MetricStatus.OK, round(min(1.0, max(0.0, score)), 4), reasoning)

    @classmethod
    def skipped(cls, reason: str) -> MetricVerdict:
        return cls(MetricStatus.SKIPPED, None, reason)

    @classmethod
    def error(cls, reason: str) -> MetricVerdict:
        return cls(MetricStatus.ERROR, None, reason)


@dataclass
class Judgement:
    judge: str
    task_adherence: MetricVerdict
    tool_call_accuracy: MetricVerdict
    intent_resolution: MetricVerdict
    # Token usage summed over the judge's LLM calls; None for judges that call no LLM.
    usage: dict[str, int] | None = None

    def verdicts(self) -> dict[str, MetricVerdict]:
        return {name: getattr(self, name) for name in METRICS}

    @property
    def overall_score(self) -> float | None:
        return overall_score(self.verdicts())

    @property
    def has_error(self) -> bool:
        return any(v.status == MetricStatus.ERROR for v in self.verdicts().values())


def overall_score(verdicts: dict[str, MetricVerdict]) -> float | None:
    """The weighted mean of the scored metrics.

    A skipped metric (does not apply) leaves the formula and the other weights are rescaled, so an
    agent that rightly needed no tool is judged on task and intent alone. A metric in error makes the
    overall score None: the interaction was not fully judged, and any number would be invented.
    """
    if any(v.status == MetricStatus.ERROR for v in verdicts.values()):
        return None
    scored = {name: v.score for name, v in verdicts.items() if v.status == MetricStatus.OK}
    if not scored:
        return None
    weight = sum(WEIGHTS[name] for name in scored)
    return round(sum(WEIGHTS[name] * score for name, score in scored.items()) / weight, 4)


class AgenticJudge(Protocol):
    label: str

    def judge(self, item: JudgeInput) -> Judgement: ...
