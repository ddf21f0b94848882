"""The canonical TRACE payload, and the metric names and requirements of the contract's table.

Every input form (a JSON string, natural language read by rules or by the LLM) ends up as a
TracePayload; validation and missing-parameter flags work on nothing else.
"""

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from apps.core.api.validation import JsonObject, Text

# Field limits (docs/rag.md): each metric is linear in these sizes except the Levenshtein
# similarity of answer_accuracy, which is quadratic in the answer and ground truth lengths; at these
# sizes the largest payload scores in well under a second of CPU (bench/trace_worst.py). Past them
# the request is 422, never a worker pinned for seconds.
MAX_CONTEXTS = 500
MAX_TESTS = 50
MAX_QUESTION_CHARS = 10_000
MAX_ANSWER_CHARS = 20_000
MAX_GROUND_TRUTHS = 10
MAX_GROUND_TRUTH_CHARS = 20_000
MAX_CONTEXT_CHARS = 100_000
MAX_CONTEXTS_TOTAL_CHARS = 1_000_000
# The whole `query` (JSON or natural language), so the parsers too see a bounded text.
MAX_QUERY_CHARS = 1_500_000

# The contract's table, in its order. Parameter names are the canonical payload's field names.
METRIC_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "answer_accuracy": ("answer", "ground_truth"),
    "context_recall": ("contexts", "relevant_context_ids"),
    "context_precision": ("contexts", "relevant_context_ids"),
    "faithfulness": ("answer", "contexts"),
    "answer_relevancy": ("question", "answer"),
    "context_utilisation": ("question", "contexts", "answer"),
}
SUPPORTED_TESTS = tuple(METRIC_REQUIREMENTS)
UNSUPPORTED = "unsupported_test"

# Spellings people send for the same metric; anything else is kept (normalised) and flagged unsupported.
TEST_ALIASES = {
    "context_utilization": "context_utilisation",
    "answer_relevance": "answer_relevancy",
}


def normalise_test_name(raw: str) -> str:
    name = re.sub(r"[\s\-]+", "_", raw.strip().casefold())
    return TEST_ALIASES.get(name, name)


def _unique(values: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        seen.setdefault(value, None)
    return list(seen)


class Context(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[Text, Field(min_length=1, max_length=255)]
    text: Annotated[Text, Field(max_length=MAX_CONTEXT_CHARS)]


_GroundTruth = Annotated[Text, Field(max_length=MAX_GROUND_TRUTH_CHARS)]


class TracePayload(BaseModel):
    """What TRACE evaluates. `ground_truth` may hold several acceptable answers."""

    model_config = ConfigDict(extra="forbid")

    tests: Annotated[list[Annotated[Text, Field(max_length=255)]], Field(max_length=MAX_TESTS)] = Field(
        default_factory=list
    )
    question: Annotated[Text, Field(max_length=MAX_QUESTION_CHARS)] | None = None
    contexts: Annotated[list[Context], Field(max_length=MAX_CONTEXTS)] = Field(default_factory=list)
    answer: Annotated[Text, Field(max_length=MAX_ANSWER_CHARS)] | None = None
    ground_truth: _GroundTruth | Annotated[list[_GroundTruth], Field(max_length=MAX_GROUND_TRUTHS)] | None = None
    relevant_context_ids: list[Annotated[Text, Field(max_length=255)]] = Field(default_factory=list)
    extra: JsonObject = Field(default_factory=dict)

    @field_validator("tests")
    @classmethod
    def _normalise_tests(cls, tests: list[str]) -> list[str]:
        return _unique([normalise_test_name(t) for t in tests if t.strip()])

    @field_validator("relevant_context_ids")
    @classmethod
    def _dedupe_ids(cls, ids: list[str]) -> list[str]:
        return _unique([i.strip() for i in ids if i.strip()])

    @field_validator("contexts")
    @classmethod
    def _bounded_contexts(cls, contexts: list[Context]) -> list[Context]:
        total = sum(len(c.text) for c in contexts)
        if total > MAX_CONTEXTS_TOTAL_CHARS:
            raise PydanticCustomError(
                "too_long",
                "the contexts hold {total} characters together, more than the limit of {limit}",
                {"total": total, "limit": MAX_CONTEXTS_TOTAL_CHARS},
            )
        return contexts

    @model_validator(mode="after")
    def _unique_context_ids(self):
        ids = [c.id for c in self.contexts]
        duplicated = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
        if duplicated:
            raise ValueError(f"context ids must be unique; repeated: {', '.join(duplicated)}")
        return self

    @property
    def ground_truths(self) -> list[str]:
        if self.ground_truth is None:
            return []
        values = [self.ground_truth] if isinstance(self.ground_truth, str) else self.ground_truth
        return [v for v in values if v.strip()]

    def has(self, parameter: str) -> bool:
        """Present in the contract's sense: not None, not an empty list, not a blank string."""
        if parameter == "ground_truth":
            return bool(self.ground_truths)
        value = getattr(self, parameter)
        if isinstance(value, str):
            return bool(value.strip())
        return bool(value)


def missing_parameters(payload: TracePayload) -> dict[str, list[str] | bool]:
    """Per requested test: the missing parameter names, ["unsupported_test"], or False."""
    missing: dict[str, list[str] | bool] = {}
    for test in payload.tests:
        required = METRIC_REQUIREMENTS.get(test)
        if required is None:
            missing[test] = [UNSUPPORTED]
            continue
        absent = [name for name in required if not payload.has(name)]
        missing[test] = absent or False
    return missing
