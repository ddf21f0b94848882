"""Request and response models of the Agentic Metrics API (validation and OpenAPI in one place)."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AliasPath, BaseModel, ConfigDict, Field, RootModel, StrictBool

from apps.agentic.services import MANUAL_AGENT_NAME, MAX_BATCH_SESSIONS
from apps.core.api.responses import absent_if_none
from apps.core.api.schemas import JudgeFingerprintOut
from apps.core.api.validation import Identifier, JsonObject, NonBlankText, StorableJson, Text
from apps.scores.schemas import AgreementOut
from apps.scores.vocabulary import JudgeStatus

MAX_MANUAL_TOOL_CALLS = 1000
ShortText = Annotated[Text, Field(max_length=255)]
JudgeChoice = Annotated[
    Literal["heuristic", "llm"] | None,
    Field(
        description="Which judge scores: `heuristic` (heuristic:v1) or `llm` (openai:<model>). "
        "Default: the LLM judge when one is configured, else the heuristic judge."
    ),
]
Force = Annotated[
    StrictBool,
    Field(description="Judge again even when this trace, unchanged, was already evaluated by the same judge."),
]


class SessionEvaluateIn(BaseModel):
    session_id: Identifier
    force: Force = False
    judge: JudgeChoice = None


class ManualToolCallIn(BaseModel):
    tool_name: Identifier
    tool_args: JsonObject = Field(default_factory=dict)
    tool_result: StorableJson = None
    success: StrictBool = True
    error: Text | None = None


class ManualEvaluateIn(BaseModel):
    user_query: NonBlankText
    agent_response: Text | None
    tool_calls: Annotated[list[ManualToolCallIn], Field(max_length=MAX_MANUAL_TOOL_CALLS)] = Field(default_factory=list)
    detected_intent: ShortText | None = None
    resource_type: ShortText | None = None
    operation: ShortText | None = None
    agent_name: Identifier = Field(default=MANUAL_AGENT_NAME, description="Shown in history and summary.")
    success: StrictBool | None = Field(default=None, description="The agent's own verdict, if it gave one.")
    judge: JudgeChoice = None


class BatchEvaluateIn(BaseModel):
    session_ids: Annotated[list[Identifier], Field(min_length=1, max_length=MAX_BATCH_SESSIONS)]
    force: Force = False
    judge: JudgeChoice = None


# The query models parse a view's query string (apps.core.api.query_params.query_of: a bad value is
# the API's 422) and document its parameters (query_parameters), so the two cannot drift apart.
class HistoryQuery(BaseModel):
    limit: Annotated[int, Field(ge=1, le=500, description="Evaluations in the page, 1-500.")] = 50
    offset: Annotated[int, Field(ge=0, le=100_000_000, description="Evaluations skipped, newest first.")] = 0
    agent_name: Annotated[ShortText | None, Field(description="Only this agent's evaluations.")] = None
    operation: Annotated[ShortText | None, Field(description="Only evaluations of this detected operation.")] = None
    min_score: Annotated[
        Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None,
        Field(description="Minimum overall score, 0-1."),
    ] = None


class AgreementQuery(BaseModel):
    agent_name: Annotated[ShortText | None, Field(description="Only this agent's evaluations.")] = None


class MetricAgreementOut(BaseModel):
    """GET /metrics/agreement: an entry per agentic metric and judge that reviewers have scored."""

    reviews: int = Field(description="Reviewed (evaluation, metric) pairs, the judge's unscored ones included.")
    metrics: list[AgreementOut]


class ExportQuery(BaseModel):
    format: Annotated[Literal["json", "jsonl"], Field(description="The records as a JSON array or JSON Lines.")] = (
        "json"
    )
    download: Annotated[bool, Field(description="Stream the file instead of wrapping it in JSON.")] = False


# The Out models read the models (from_attributes): an AgentEvaluation, whose `metrics` holds its
# metric Score rows, or an EvaluationOutcome, which answers for its evaluation plus `reused`. Names
# that differ from the contract's are mapped here, by validation aliases the document does not show.
FROM_MODELS = ConfigDict(from_attributes=True)


def _metric(name: str, part: str = "value"):
    return AliasPath("metrics", name, part)


class MetricOut(BaseModel):
    """One metric's Score row."""

    model_config = FROM_MODELS

    score: float | None = Field(
        validation_alias="value", description="0..1; null when the metric was skipped or could not be scored."
    )
    reasoning: str
    status: JudgeStatus


class TokenUsageOut(BaseModel):
    model_config = FROM_MODELS

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class _EvaluationOut(BaseModel):
    model_config = FROM_MODELS

    task_adherence: MetricOut = Field(validation_alias=AliasPath("metrics", "task_adherence"))
    tool_call_accuracy: MetricOut = Field(validation_alias=AliasPath("metrics", "tool_call_accuracy"))
    intent_resolution: MetricOut = Field(validation_alias=AliasPath("metrics", "intent_resolution"))
    overall_score: float | None
    rating: str | None
    judge: str
    token_usage: TokenUsageOut
    # The model's own `fingerprint` is the judged input's hash; the contract's is what judged.
    fingerprint: Annotated[JudgeFingerprintOut | None, Field(validation_alias="judge_fingerprint")] = absent_if_none(
        "what judged; absent on evaluations stored before judges were fingerprinted"
    )


class SessionEvaluationOut(_EvaluationOut):
    session_id: str
    agent_name: str
    timestamp: datetime = Field(validation_alias="created_at")
    reused: bool = Field(description="True when the stored evaluation of this unchanged trace was returned.")
    metadata: dict


class ManualEvaluationOut(_EvaluationOut):
    session_id: str = Field(description="Generated for this evaluation; look it up with GET /history/{session_id}.")
    evaluation_timestamp: datetime = Field(validation_alias="created_at")


class BatchResultOut(BaseModel):
    model_config = FROM_MODELS

    session_id: str
    agent_name: str
    task_adherence: float | None = Field(validation_alias=_metric("task_adherence"))
    tool_call_accuracy: float | None = Field(validation_alias=_metric("tool_call_accuracy"))
    intent_resolution: float | None = Field(validation_alias=_metric("intent_resolution"))
    overall_score: float | None
    rating: str | None
    judge: str
    reused: bool


class BatchEvaluationOut(BaseModel):
    model_config = FROM_MODELS

    evaluated: int
    not_found: int
    results: list[BatchResultOut] = Field(validation_alias="outcomes")
    missing_sessions: list[str]


class AgentStatsOut(BaseModel):
    count: int
    avg_score: float | None


class MetricCoverageOut(BaseModel):
    scored: int = Field(description="evaluations the judge gave this metric a score")
    skipped: int = Field(description="evaluations the judge said it could not score this metric")
    errored: int = Field(description="evaluations the judge failed on for this metric")


class SummaryOut(BaseModel):
    total_evaluations: int
    average_scores: dict[str, float | None]
    score_distribution: dict[str, int]
    coverage: dict[str, MetricCoverageOut] = Field(
        description="per metric, the denominators of its average: scored, skipped and errored evaluations"
    )
    by_agent: dict[str, AgentStatsOut]
    by_operation: dict[str, AgentStatsOut]


class EvaluationRecordOut(BaseModel):
    """The flat record of history and export: the evaluation's fields and its metrics' beside them."""

    model_config = FROM_MODELS

    session_id: str
    agent_name: str
    operation: str | None
    source: str
    task_adherence: float | None = Field(validation_alias=_metric("task_adherence"))
    task_adherence_reasoning: str = Field(validation_alias=_metric("task_adherence", "reasoning"))
    task_adherence_status: str = Field(validation_alias=_metric("task_adherence", "status"))
    tool_call_accuracy: float | None = Field(validation_alias=_metric("tool_call_accuracy"))
    tool_call_accuracy_reasoning: str = Field(validation_alias=_metric("tool_call_accuracy", "reasoning"))
    tool_call_accuracy_status: str = Field(validation_alias=_metric("tool_call_accuracy", "status"))
    intent_resolution: float | None = Field(validation_alias=_metric("intent_resolution"))
    intent_resolution_reasoning: str = Field(validation_alias=_metric("intent_resolution", "reasoning"))
    intent_resolution_status: str = Field(validation_alias=_metric("intent_resolution", "status"))
    overall_score: float | None
    rating: str | None
    judge: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    timestamp: datetime = Field(validation_alias="created_at")


class RuleRefOut(BaseModel):
    model_config = FROM_MODELS

    id: int
    name: str


class HistoryRecordOut(EvaluationRecordOut):
    rule: RuleRefOut | None = Field(
        description="The online evaluation rule that asked for this verdict; null when someone requested it."
    )


class HistoryOut(BaseModel):
    count: int = Field(description="Evaluations in this page.")
    limit: int
    offset: int
    has_more: bool = Field(description="Whether evaluations follow this page.")
    evaluations: list[HistoryRecordOut]


class ExportOut(BaseModel):
    format: Literal["json", "jsonl"]
    data: str


class ExportJsonOut(RootModel[ExportOut | list[EvaluationRecordOut]]):
    """GET /export as application/json: the contract's {format, data}, or with download=true and
    format=json the file itself, an array of records."""


class DatabaseHealthOut(BaseModel):
    status: str
    evaluations_stored: int | None = absent_if_none("Absent when the database is unreachable.")
    traces_stored: int | None = absent_if_none("Absent when the database is unreachable.")


class HealthOut(BaseModel):
    status: Literal["healthy", "unhealthy"]
    service: str
    evaluations_count: int | None
    database: DatabaseHealthOut


class ClearOut(BaseModel):
    message: str
