"""Request and response models of POST /trace (= /api/v1/trace) and GET /api/v1/trace/history."""

from datetime import datetime
from typing import Annotated, Any

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from apps.core.api.validation import NonBlankText, check_storable_json

from ..models import TraceEvaluation
from ..payload import MAX_QUERY_CHARS, Context

# ?partial= and the like: these words are true, anything else (or nothing) false, as before the
# parameters had a model.
_TRUE = {"1", "true", "yes", "on"}


def _bounded_object(value: dict[str, Any]) -> dict[str, Any]:
    size = len(orjson.dumps(value))
    if size > MAX_QUERY_CHARS:
        raise ValueError(f"the query object is {size} bytes as JSON, more than the limit of {MAX_QUERY_CHARS}")
    return value


class TraceQueryIn(BaseModel):
    query: Annotated[
        Annotated[NonBlankText, Field(max_length=MAX_QUERY_CHARS)]
        | Annotated[dict[str, Any], AfterValidator(check_storable_json), AfterValidator(_bounded_object)],
        Field(
            description="The TRACE payload as a JSON string (or, leniently, as a JSON object), or natural "
            "language such as 'Evaluate context_recall. Question: … Context ctx1: … Relevant: ctx1'."
        ),
    ]


class TraceQuery(BaseModel):
    partial: bool = Field(False, description="Score the complete tests even when others miss parameters.")

    @field_validator("partial", mode="before")
    @classmethod
    def _lenient(cls, value):
        return value.strip().lower() in _TRUE if isinstance(value, str) else value


class TraceHistoryQuery(BaseModel):
    test: str | None = Field(None, description="Only evaluations that requested this test (either spelling).")
    outcome: TraceEvaluation.Outcome | None = None

    @field_validator("test", "outcome", mode="before")
    @classmethod
    def _blank_is_absent(cls, value):
        return value or None


class LimitOffsetQuery(BaseModel):
    """The page a list answers (apps.core.api.pagination.LimitOffset reads these)."""

    limit: int | None = None
    offset: int | None = None


class ProvidedParameters(BaseModel):
    tests: list[str]
    question: str | None
    contexts: list[Context]
    answer: str | None
    ground_truth: str | list[str] | None
    relevant_context_ids: list[str]
    extra: dict[str, Any]
    parsing: dict[str, Any] = Field(
        description="source (json, natural_language:rules, natural_language:llm) and "
        "notes on what was assumed, e.g. ids given to contexts by position"
    )


# Read from the stored TraceEvaluation and its metric Score rows (models.TraceEvaluation); a comment,
# not a docstring, so that it stays out of the OpenAPI document.
class TraceAnswerOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    provided_parameters: ProvidedParameters
    tests: list[str]
    missing: dict[str, list[str] | bool] = Field(
        description='Per test: the missing parameter names, ["unsupported_test"], or false'
    )
    evaluation_scores: dict[str, float | None] = Field(
        description="0..1 per scored test; null when the metric failed (its details say why)"
    )
    details: dict[str, dict[str, Any]] = Field(
        description="Per scored test: method, judge, status and the numbers behind the score"
    )


# One requested test (apps.rag.scoring.TestResult).
class TraceTestOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    status: str
    score: float | None
    method: str
    judge: str
    missing: list[str]


class TraceEvaluationOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    created_at: datetime
    source: str
    outcome: str
    partial: bool
    judge: str
    tests: list[str]
    missing: dict[str, list[str] | bool]
    evaluation_scores: dict[str, float | None]
    details: dict[str, dict[str, Any]]
    provided_parameters: dict[str, Any]
    llm_usage: dict[str, int] | None
    duration_ms: float | None
    test_results: list[TraceTestOut]


class TraceHistoryOut(BaseModel):
    count: int
    next: str | None
    previous: str | None
    results: list[TraceEvaluationOut]
