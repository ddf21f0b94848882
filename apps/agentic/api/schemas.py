"""Request and response models of the Agentic Metrics API (validation and OpenAPI in one place)."""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from apps.core.validation import Identifier, JsonObject, NonBlankText, StorableJson, Text
from apps.traces.api.schemas import MAX_TOOL_CALLS_PER_REQUEST, ShortText

from ..services import MAX_BATCH_SESSIONS

JudgeChoice = Literal["auto", "heuristic", "llm"]
JUDGE_DESCRIPTION = ("auto (default): the LLM judge when one is configured, else heuristic:v1. "
                     "heuristic or llm pick one explicitly; llm without a configured LLM is a 422.")


class SessionEvaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_id: Identifier
    force: StrictBool = Field(False, description="Judge again even if this trace and judge were judged before.")
    judge: JudgeChoice = Field("auto", description=JUDGE_DESCRIPTION)


class ManualToolCallIn(BaseModel):
    tool_name: Identifier
    tool_args: JsonObject = Field(default_factory=dict)
    tool_result: StorableJson = None
    success: StrictBool = True
    error: Text | None = None


class ManualEvaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_query: NonBlankText
    agent_response: Text | None
    tool_calls: Annotated[list[ManualToolCallIn], Field(max_length=MAX_TOOL_CALLS_PER_REQUEST)] = Field(
        default_factory=list)
    detected_intent: ShortText | None = None
    resource_type: ShortText | None = None
    operation: ShortText | None = None
    agent_name: Identifier | None = Field(None, description="Recorded for summaries; defaults to 'manual'.")
    judge: JudgeChoice = Field("auto", description=JUDGE_DESCRIPTION)


class BatchEvaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_ids: Annotated[list[Identifier], Field(min_length=1, max_length=MAX_BATCH_SESSIONS)]
    force: StrictBool = False
    judge: JudgeChoice = Field("auto", description=JUDGE_DESCRIPTION)


class HistoryQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=10_000_000)
    agent_name: Annotated[Text, Field(max_length=255)] | None = None
    operation: Annotated[Text, Field(max_length=255)] | None = None
    min_score: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)


class ExportQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    format: Literal["json", "jsonl"] = "json"
    stream: bool = False


# Plain strings in responses (documented values) keep the OpenAPI enum names free of collisions.
MetricStatusOut = Annotated[str, Field(description="ok, skipped (does not apply) or error (could not be scored)")]


class MetricOut(BaseModel):
    score: float | None = Field(description="0..1; null when the metric was skipped or could not be scored.")
    reasoning: str
    status: MetricStatusOut


class TokenUsageOut(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class EvaluationCommon(BaseModel):
    task_adherence: MetricOut
    tool_call_accuracy: MetricOut
    intent_resolution: MetricOut
    overall_score: float | None = Field(description="0.4 task + 0.3 tool + 0.3 intent over the scored metrics; "
                                                    "null when any metric is in error.")
    rating: str | None = Field(description="excellent, good, acceptable, poor or failed; null without an overall score")
    judge: str = Field(description="heuristic:v1 or openai:<model>")
    token_usage: TokenUsageOut | None
    evaluation_id: int


class SessionEvaluationOut(EvaluationCommon):
    session_id: str
    agent_name: str
    timestamp: datetime
    reused: bool = Field(description="True when the stored evaluation of this unchanged trace was returned.")
    metadata: dict[str, Any]


class ManualEvaluationOut(EvaluationCommon):
    session_id: str = Field(description="Generated id under which history finds this evaluation.")
    evaluation_timestamp: datetime


class BatchResultOut(BaseModel):
    session_id: str
    agent_name: str
    task_adherence: float | None
    tool_call_accuracy: float | None
    intent_resolution: float | None
    overall_score: float | None
    rating: str | None
    judge: str
    reused: bool
    statuses: dict[str, MetricStatusOut]


class SkippedSessionOut(BaseModel):
    session_id: str
    reason: str


class BatchEvaluationOut(BaseModel):
    evaluated: int
    not_found: int
    results: list[BatchResultOut]
    missing_sessions: list[str]
    skipped_sessions: list[SkippedSessionOut]


class CountAvg(BaseModel):
    count: int
    avg_score: float | None


class SummaryOut(BaseModel):
    total_evaluations: int
    average_scores: dict[str, float | None]
    score_distribution: dict[str, int]
    by_agent: dict[str, CountAvg]
    by_operation: dict[str, CountAvg]


class FlatEvaluationOut(BaseModel):
    session_id: str
    source: str = Field(description="session (a stored trace) or manual")
    agent_name: str
    operation: str | None
    intent_detected: str | None
    resource_type: str | None
    user_query: str
    task_adherence: float | None
    task_adherence_reasoning: str
    task_adherence_status: MetricStatusOut
    tool_call_accuracy: float | None
    tool_call_accuracy_reasoning: str
    tool_call_accuracy_status: MetricStatusOut
    intent_resolution: float | None
    intent_resolution_reasoning: str
    intent_resolution_status: MetricStatusOut
    overall_score: float | None
    rating: str | None
    judge: str
    token_usage: TokenUsageOut | None
    evaluation_id: int
    timestamp: datetime


class HistoryOut(BaseModel):
    count: int = Field(description="Evaluations in this page.")
    limit: int
    offset: int
    has_more: bool
    evaluations: list[FlatEvaluationOut]


class ExportOut(BaseModel):
    format: str = Field(description="json or jsonl")
    data: str


class DatabaseHealth(BaseModel):
    status: str = Field(description="connected or disconnected")
    evaluations_stored: int | None = None
    traces_stored: int | None = None
    error: str | None = None


class HealthOut(BaseModel):
    status: str = Field(description="healthy or unhealthy")
    service: str
    evaluations_count: int | None
    database: DatabaseHealth


class ClearOut(BaseModel):
    message: str
    evaluations_deleted: int
    traces_deleted: int
