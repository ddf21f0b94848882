"""What every judge takes and returns: plain data, no ORM, so a judge runs anywhere (a thread of a
batch, a Celery worker, a benchmark) and tests build inputs directly."""

from dataclasses import dataclass, field
from typing import Any, Protocol

from apps.scores.vocabulary import JudgeStatus

AGENTIC_METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")


@dataclass(frozen=True)
class JudgeToolCall:
    tool_name: str
    tool_args: dict = field(default_factory=dict)
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
    # The agent's own verdict on the session (trace.success); None when it did not say.
    success: bool | None = None

    def canonical(self) -> dict:
        return {
            "query": self.query,
            "final_response": self.final_response,
            "intent": self.intent,
            "resource_type": self.resource_type,
            "operation": self.operation,
            "success": self.success,
            "tool_calls": [
                {
                    "tool_name": c.tool_name,
                    "tool_args": c.tool_args,
                    "tool_result": c.tool_result,
                    "success": c.success,
                    "error": c.error,
                }
                for c in self.tool_calls
            ],
        }


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class MetricResult:
    status: JudgeStatus
    score: float | None
    reasoning: str
    # What scoring this metric cost, for a judge that spends tokens (stored on its Score row).
    usage: TokenUsage | None = None

    @classmethod
    def ok(cls, score: float, reasoning: str, usage: TokenUsage | None = None) -> "MetricResult":
        return cls(JudgeStatus.OK, round(min(max(score, 0.0), 1.0), 4), reasoning, usage)

    @classmethod
    def skipped(cls, reason: str) -> "MetricResult":
        return cls(JudgeStatus.SKIPPED, None, reason)

    @classmethod
    def error(cls, reason: str) -> "MetricResult":
        return cls(JudgeStatus.ERROR, None, reason)


@dataclass(frozen=True)
class AgenticVerdict:
    judge: str
    task_adherence: MetricResult
    tool_call_accuracy: MetricResult
    intent_resolution: MetricResult
    usage: TokenUsage = TokenUsage()
    # What judged (apps.core.llm.fingerprint); stored on the evaluation as judge_fingerprint.
    fingerprint: dict | None = None
    # The judge of a metric that another judge graded (a published MetricJudge), by metric name.
    metric_judges: dict[str, str] = field(default_factory=dict)

    def metric(self, name: str) -> MetricResult:
        return getattr(self, name)


class AgenticJudge(Protocol):
    """Scores one agent session on the three agentic metrics.

    `parallel` says whether evaluating several sessions at once gains anything: true for judges
    that wait on the network, false for CPU-bound ones (threads would only add overhead)."""

    parallel: bool

    @property
    def label(self) -> str: ...

    @property
    def fingerprint(self) -> dict:
        """What this judge would record (apps.core.llm.fingerprint), known before it judges: a
        stored evaluation is reused only if it was judged alike (services._reusable)."""
        ...

    def evaluate(self, data: JudgeInput) -> AgenticVerdict: ...
