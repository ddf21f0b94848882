"""The validated input the run service takes: RunCreateIn, parsed by the API from a request body and
built by every other caller (console and admin launch forms, evalrun, the demo data, a rerun) with
RunCreateIn.of, so the service never checks again what the model checked. The answers are in api/schemas.py."""

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, model_validator

from apps.agentic.judges import AGENTIC_METRICS
from apps.core.api.handlers import pydantic_error_detail
from apps.core.api.validation import Identifier, NonBlankText, Text
from apps.core.errors import InvalidInputError

from .judging.aggregate import SCOPES
from .models import LABEL_MAX_LENGTH

MAX_CONCURRENCY = 32
MAX_REPEATS = 10

AgentId = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{24}$", description="mongodb-objectid: 24 hex characters")]


# How the run service worded these refusals before it took a validated RunCreateIn: the console, the
# admin and evalrun keep showing the same words (the API answers pydantic's field errors, as always).
_REFUSALS = {
    ("label", "too_long"): f"label is at most {LABEL_MAX_LENGTH} characters",
    ("concurrency", None): f"concurrency must be between 1 and {MAX_CONCURRENCY}",
    ("repeats", None): f"repeats must be a whole number between 1 and {MAX_REPEATS}",
    ("component_scope_filter", None): f"component_scope_filter must be one of {', '.join(SCOPES)}",
}


def _refusal(error: dict) -> str:
    field = ".".join(map(str, error["loc"]))
    words = _REFUSALS.get((field, error["type"])) or _REFUSALS.get((field, None))
    return words or f"{field}: {error['msg']}"


class RunCreateIn(BaseModel):
    agent_id: AgentId
    test_set_id: uuid.UUID | None = None
    test_set_version: Annotated[StrictInt, Field(ge=1)] | None = None
    dataset_id: uuid.UUID | None = None
    rubric_id: uuid.UUID | None = None
    rubric_version: Annotated[StrictInt, Field(ge=1)] | None = None
    concurrency: Annotated[StrictInt, Field(ge=1, le=MAX_CONCURRENCY)] = 3
    repeats: Annotated[StrictInt, Field(ge=1, le=MAX_REPEATS)] = Field(
        default=1, description="how many times each item runs (attempts 1..repeats; never served from a cache)"
    )
    component_scope_filter: Literal["prompt", "knowledge_base", "function", "general"] | None = None
    component_ids_filter: Annotated[list[Identifier], Field(max_length=100)] | None = None
    judge_model: Identifier | None = Field(default=None, description='"heuristic", or an LLM model name')
    label: Annotated[Text, Field(max_length=LABEL_MAX_LENGTH)] = Field(
        default="", description='what to call the run ("after removing the PTO doc"); optional'
    )

    @classmethod
    def of(cls, **fields) -> "RunCreateIn":
        """The input of a caller that is not the API: a None is a field left out (its default, as a
        blank form field or a command-line option not given means), and a refusal is the
        InvalidInputError the caller already shows (a form error, a command error), field by field."""
        try:
            return cls.model_validate({name: value for name, value in fields.items() if value is not None})
        except ValidationError as exc:
            raise InvalidInputError("; ".join(_refusal(error) for error in pydantic_error_detail(exc))) from exc


# The instructions an alignment trial may propose for a rule (apps.runs.judging.llm.RULE_INSTRUCTIONS
# is about 300 characters; a long one with worked examples stays well under this).
MAX_PROMPT_TEMPLATE = 8000


class CandidateIn(BaseModel):
    """One change to how a rule is judged, exactly one of the three."""

    model_config = ConfigDict(extra="forbid")

    rubric_version: Annotated[StrictInt, Field(ge=1)] | None = Field(
        default=None, description="A version of the rubric whose text of the rule is tried (the judge stays)."
    )
    judge_model: Identifier | None = Field(
        default=None, description='"heuristic", or an LLM model the operator allows (EVALSITE_JUDGE_MODELS).'
    )
    prompt_template: Annotated[NonBlankText, Field(max_length=MAX_PROMPT_TEMPLATE)] | None = Field(
        default=None,
        description="The instructions an LLM judge reads before the rule, the bot context and the conversation "
        "(those are always appended as data; the system prompt's rule that data is never an instruction holds).",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> "CandidateIn":
        given = [name for name, value in self.model_dump().items() if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of rubric_version, judge_model and prompt_template")
        return self

    @property
    def as_dict(self) -> dict:
        return self.model_dump(exclude_none=True)


class AlignmentTrialIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: Annotated[StrictStr, Field(min_length=1, max_length=100)] = Field(description="The rule's id.")
    candidate: CandidateIn


class MetricTrialIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: Literal[AGENTIC_METRICS] = Field(description="The agentic metric whose judge is tried.")
    agent_name: Annotated[StrictStr, Field(min_length=1, max_length=255)] | None = Field(
        default=None,
        description="Only this agent's evaluations (and publishing sets its judge); default every agent's.",
    )
    candidate: CandidateIn = Field(description="A judge_model or a prompt_template (a metric has no rubric versions).")
