"""Request and response models of the trace ingestion API (validation and OpenAPI in one place)."""

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    StrictBool,
)

from apps.core.api.responses import absent_if_none
from apps.core.api.schemas import Amount
from apps.core.api.validation import Identifier, JsonObject, NonBlankText, StorableJson, Text

MAX_TOOL_CALLS_PER_REQUEST = 1000
MAX_TRACES_PER_BATCH = 1000
# The key becomes part of each call's call_id ("idem:<key>:<index>"), a 255-character column.
MAX_IDEMPOTENCY_KEY_LENGTH = 200


def _aware(value: datetime | None) -> datetime | None:
    # Timestamps without an offset are taken as UTC, as most agent SDKs mean them.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
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


class ToolCallHeaders(BaseModel):
    """The tool-call door's optional header: parsed by this model, and documented from it as a header
    parameter (views.header_parameters), as a query model is."""

    idempotency_key: IdempotencyKey | None = Field(
        default=None,
        alias="Idempotency-Key",
        description="Makes a retried request safe for calls sent without call_id "
        f"(1 to {MAX_IDEMPOTENCY_KEY_LENGTH} characters).",
    )


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


# The answers read the rows (from_attributes): AgentTrace and ToolCall, with what an answer works
# out beside them (a page of calls, the next page's URL) added by apps.core.api.attributes.with_attributes.


class ToolCallOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    # A call read for an answer carries `position`, its place in the trace (the stored seq, an order
    # key, may have gaps); a call just recorded through the per-step endpoint has its position as seq.
    seq: int = Field(
        validation_alias=AliasChoices("position", "seq"),
        description="The call's position in the trace, 1 to n in order, worked out when read (the "
        "stored order key of an OpenTelemetry trace may have gaps)",
    )
    call_id: str | None
    tool_name: str
    tool_args: dict
    tool_result: Any
    timestamp: datetime
    success: bool
    error: str | None
    duration_ms: float | None


def _no_drops(value):
    # Rows older than the caps column hold null: nothing was dropped.
    return value or {}


class TraceCostOut(BaseModel):
    """What the trace's model calls cost (apps.traces.costs): the gen_ai.usage.* tokens of its OTLP
    spans, each model's at its price on the trace's start date; kept on the trace when it is stored
    and when late spans join it."""

    model_config = ConfigDict(from_attributes=True)
    amount: Amount = Field(description="USD; null when no call was priced (no tokens, or an unpriced model)")
    currency: Literal["USD"]
    unpriced_calls: int = Field(
        description="Calls with tokens but no price: a model without a price of that date, or no model named"
    )


class TraceOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    session_id: str
    user_query: str
    agent_name: str
    intent_detected: str | None
    resource_type: str | None
    operation: str | None
    tool_calls: list[ToolCallOut] = Field(
        description="The first page of the tool calls, in order (all of them "
        "when there are no more than a page's worth)"
    )
    tool_calls_total: int = Field(description="How many tool calls the trace holds")
    tool_calls_next: str | None = Field(
        description="The URL of the next page of tool calls "
        "(GET /trace/{session_id}/tool-calls?after=…), null when all are shown"
    )
    final_response: str | None
    success: bool | None
    status: str
    error: str | None
    start_time: datetime
    end_time: datetime | None
    metadata: dict
    source: str = Field(description="How the trace arrived: rest (per-step calls), batch or otlp (OpenTelemetry)")
    truncated: bool = Field(description="Whether a per-trace cap refused part of what arrived for this trace")
    dropped: Annotated[dict[str, int], BeforeValidator(_no_drops)] = Field(
        description="What the caps refused, by kind: tool_calls, spans, attribute_bytes"
    )
    cost: TraceCostOut


class ToolCallPageQuery(BaseModel):
    after: Annotated[int, Field(ge=0, le=2**63 - 1)] = Field(
        default=0, description="The cursor from tool_calls_next: the page starts after this call (0, the first page)"
    )
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Calls per page, at most (and by default) EVALSITE_TRACE_TOOL_CALLS_PAGE"
    )


class ToolCallPageOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    session_id: str
    tool_calls: list[ToolCallOut]
    tool_calls_total: int = Field(description="How many tool calls the trace holds")
    tool_calls_next: str | None = Field(description="The URL of the next page, null on the last")


class ToolCallRecorded(ToolCallOut):
    created: bool


class ToolCallsOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    session_id: str
    tool_calls: list[ToolCallRecorded]


# A key without `read` (an ingest-only key) may write to any session, so an answer showing the trace
# would hand it other agents' queries and tool results that GET /trace refuses it. It gets back an
# acknowledgement instead: the session and its state, and for tool calls which were recorded.
class TraceWrittenOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    session_id: str
    status: str


class TraceAnswer(RootModel[TraceOut | TraceWrittenOut]):
    """The trace (keys with the read scope), or an acknowledgement (keys without it)."""


class ToolCallWritten(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    seq: int = Field(description="The stored order key of the call")
    call_id: str | None
    created: bool


class ToolCallsWrittenOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
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


# --- the ingestion ledger ---------------------------------------------------------------------

LEDGER_DEFAULT_WINDOW_HOURS = 24
LedgerSourceName = Literal["rest", "batch", "otlp", "online_evaluation"]


def _query_time(value):
    # A "+" in a query string decodes to a space: "…T10:00:00 02:00" was sent as "+02:00".
    if isinstance(value, str) and len(value) > 6 and value[-6] == " " and value[-3] == ":":
        return value[:-6] + "+" + value[-5:]
    return value


_EARLIEST, _LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)


def _in_range(value: datetime) -> datetime:
    # A window's other end is computed from this one (minus 24 hours): year 1 or 9999 would overflow.
    if not _EARLIEST <= value <= _LATEST:
        raise ValueError("must be between 1970 and 9000")
    return value


QueryTime = Annotated[datetime, BeforeValidator(_query_time), AfterValidator(_aware), AfterValidator(_in_range)]


class LedgerQuery(BaseModel):
    since: QueryTime | None = Field(
        default=None,
        description="ISO 8601 instant (an offset or Z; without one, UTC); "
        f"default `until` minus {LEDGER_DEFAULT_WINDOW_HOURS} hours.",
    )
    until: QueryTime | None = Field(default=None, description="ISO 8601 instant, excluded; default now.")
    source: LedgerSourceName | None = Field(default=None, description="Only this source; default every one.")


class DoorLedgerOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    received: int = Field(description="Items that came in: lifecycle records (rest), traces (batch), spans (otlp).")
    stored: int
    duplicate: int = Field(description="Identical retries of what was already stored, stored once.")
    rejected: dict[str, int] = Field(description="Items refused, by reason.")
    dropped: dict[str, int] = Field(
        description="Items taken and later discarded (orphan children, over a per-trace cap, expired), by reason."
    )
    balanced: bool = Field(description="received = stored + duplicate + rejected + dropped over the window.")


class OnlineEvaluationLedgerOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    sampled: int = Field(description="(rule, trace) evaluations picked by the rules' sampling and queued.")
    evaluated: int = Field(description="Judged, or answered by an identical earlier verdict.")
    skipped: int = Field(description="Not judged: the rule was disabled or deleted, or the trace gone.")
    errored: int = Field(description="The judge failed or was unavailable, or the task could not be queued.")
    pending: int = Field(description="sampled − evaluated − skipped − errored: queued, not finished yet.")


class LedgerOut(BaseModel):
    since: datetime
    until: datetime
    sources: dict[str, DoorLedgerOut] = Field(description="Per door (rest, batch, otlp), or the one asked for.")
    online_evaluation: OnlineEvaluationLedgerOut | None = absent_if_none("Left out when `source` names a door.")
