"""Request and response models of the trace ingestion API (validation and OpenAPI in one place)."""

from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, StrictBool

from apps.core.validation import Identifier, JsonObject, NonBlankText, StorableJson, Text

MAX_TOOL_CALLS_PER_REQUEST = 1000
MAX_TRACES_PER_BATCH = 1000
# The key becomes part of each call's call_id ("idem:<key>:<index>"), a 255-character column.
MAX_IDEMPOTENCY_KEY_LENGTH = 200


def _aware(value: datetime | None) -> datetime | None:
    # Timestamps without an offset are taken as UTC, as most agent SDKs mean them.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


Timestamp = Annotated[datetime, AfterValidator(_aware)]
ShortText = Annotated[Text, Field(max_length=255)]


class TraceStartIn(BaseModel):
    session_id: Identifier
    user_query: NonBlankText
    agent_name: Identifier
    metadata: JsonObject = Field(default_factory=dict)


class IntentIn(BaseModel):
    intent: Identifier
    resource_type: ShortText | None = None
    operation: ShortText | None = None


class ToolCallIn(BaseModel):
    tool_name: Identifier
    tool_args: JsonObject = Field(default_factory=dict)
    tool_result: StorableJson = None
    success: StrictBool = True
    error: Text | None = None
    duration_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    call_id: Identifier | None = Field(default=None, description="Client id that makes retries safe.")
    timestamp: Timestamp | None = None


class CompleteIn(BaseModel):
    final_response: Text | None
    success: StrictBool
    error: Text | None = None


IdempotencyKey = Annotated[Identifier, Field(max_length=MAX_IDEMPOTENCY_KEY_LENGTH)]


class BatchTraceIn(BaseModel):
    session_id: Identifier
    user_query: NonBlankText
    agent_name: Identifier
    intent_detected: ShortText | None = None
    resource_type: ShortText | None = None
    operation: ShortText | None = None
    tool_calls: Annotated[list[ToolCallIn], Field(max_length=MAX_TOOL_CALLS_PER_REQUEST)] = Field(default_factory=list)
    final_response: Text | None
    success: StrictBool
    error: Text | None = None
    start_time: Timestamp | None = None
    end_time: Timestamp | None = None
    metadata: JsonObject = Field(default_factory=dict)


class BatchIn(BaseModel):
    # Items stay raw here: each is validated on its own so one bad trace rejects only itself.
    traces: Annotated[list[Any], Field(min_length=1, max_length=MAX_TRACES_PER_BATCH)]


class ToolCallOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    seq: int
    call_id: str | None
    tool_name: str
    tool_args: dict
    tool_result: Any
    timestamp: datetime
    success: bool
    error: str | None
    duration_ms: float | None


class TraceOut(BaseModel):
    session_id: str
    user_query: str
    agent_name: str
    intent_detected: str | None
    resource_type: str | None
    operation: str | None
    tool_calls: list[ToolCallOut]
    final_response: str | None
    success: bool | None
    status: str
    error: str | None
    start_time: datetime
    end_time: datetime | None
    metadata: dict
    source: str = Field(description="How the trace arrived: rest (per-step calls), batch or otlp (OpenTelemetry)")


class ToolCallRecorded(ToolCallOut):
    created: bool


class ToolCallsOut(BaseModel):
    session_id: str
    tool_calls: list[ToolCallRecorded]


# A key without `read` (an ingest-only key) may write to any session, so an answer showing the trace
# would hand it other agents' queries and tool results that GET /trace refuses it. It gets back an
# acknowledgement instead: the session and its state, and for tool calls which were recorded.
class TraceWrittenOut(BaseModel):
    session_id: str
    status: str


class TraceAnswer(RootModel[TraceOut | TraceWrittenOut]):
    """The trace (keys with the read scope), or an acknowledgement (keys without it)."""


class ToolCallWritten(BaseModel):
    seq: int
    call_id: str | None
    created: bool


class ToolCallsWrittenOut(BaseModel):
    session_id: str
    tool_calls: list[ToolCallWritten]


class ToolCallsAnswer(RootModel[ToolCallsOut | ToolCallsWrittenOut]):
    """The recorded calls (keys with the read scope), or which were recorded (keys without it)."""


class BatchAccepted(BaseModel):
    index: int
    session_id: str
    status: str = Field(description="created, or unchanged for a retry of an identical trace")


class BatchRejected(BaseModel):
    index: int
    session_id: str | None
    reason: str


class BatchOut(BaseModel):
    accepted_count: int
    rejected_count: int
    accepted: list[BatchAccepted]
    rejected: list[BatchRejected]
