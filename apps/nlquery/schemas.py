"""The contract's data models (seed 001): what the metrics_agent node reads and writes.

They are pydantic models so the LLM's structured output, the API's JSON and the page all go
through the same validation.
"""

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypedDict

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema

METRIC_NAME_PATTERN = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
LABEL_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"

Aggregation = Literal["avg", "max", "min", "sum", "none"]
ErrorType = Literal[
    "parsing_error",
    "metric_not_found",
    "invalid_time_range",
    "unsupported_operation",
    "grafana_unavailable",
    "invalid_query",
]


def _utc(value: datetime) -> datetime:
    # A time without an offset is read as UTC, the server's reference for every relative time.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _rfc3339_z(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


# Written with "Z" as pydantic's JSON mode writes UTC, also when an answer is dumped as Python
# objects for the API's renderer (which would write "+00:00"): the NL query answers kept this form.
UtcDatetime = Annotated[
    datetime,
    AfterValidator(_utc),
    PlainSerializer(_rfc3339_z, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
LabelName = Annotated[str, Field(pattern=LABEL_NAME_PATTERN, max_length=100)]
LabelValue = Annotated[str, Field(max_length=500)]


class TimeRange(BaseModel):
    # Ordering is deliberately not enforced here: an end before the start is the validation
    # step's invalid_time_range, not a parsing failure.
    start_time: UtcDatetime
    end_time: UtcDatetime


class MetricsQuery(BaseModel):
    metric_name: Annotated[str, Field(pattern=METRIC_NAME_PATTERN, max_length=200)]
    time_range: TimeRange
    aggregation: Aggregation = "none"
    filters: dict[LabelName, LabelValue] = Field(default_factory=dict, description="Label name -> exact value.")
    step: Annotated[int, Field(ge=1, le=86400)] | None = Field(
        default=None, description="Seconds between datapoints; chosen from the time range when absent."
    )


class DataPoint(BaseModel):
    timestamp: UtcDatetime
    value: float = Field(allow_inf_nan=False)
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="The series this point belongs to when the query returned several (aggregation none).",
    )


class AggregationStats(BaseModel):
    min: float
    max: float
    mean: float
    median: float
    sum: float
    count: int


class MetricsQueryResult(BaseModel):
    metric_name: str
    unit: str
    time_range: TimeRange
    datapoints: list[DataPoint]
    datapoint_count: int
    statistics: AggregationStats | None
    is_empty: bool
    promql: str = Field(description="The PromQL expression that ran, so the user can see and reuse it.")

    def series(self) -> list[tuple[str, list[tuple[datetime, float]]]]:
        """The datapoints grouped by label set, in order of first appearance, each named as PromQL
        writes a series ({code="500", job="api"}): what apps.core.charts.metric_chart draws."""
        grouped: dict[tuple, list[tuple[datetime, float]]] = {}
        for point in self.datapoints:
            grouped.setdefault(tuple(sorted(point.labels.items())), []).append((point.timestamp, point.value))
        return [(series_label(dict(labels)), values) for labels, values in grouped.items()]


def series_label(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "series"


class QueryError(BaseModel):
    model_config = ConfigDict(frozen=True)

    error_type: ErrorType
    message: str
    suggestion: str
    # For logs only: never rendered to the user nor returned by the API.
    details: dict[str, Any] | None = Field(default=None, exclude=True)


class MetricsQueryState(TypedDict):
    user_query: str
    parsed_query: MetricsQuery | None
    result: MetricsQueryResult | None
    error: QueryError | None
    processing_time_ms: float


def initial_state(user_query: str) -> MetricsQueryState:
    return {"user_query": user_query, "parsed_query": None, "result": None, "error": None, "processing_time_ms": 0.0}
