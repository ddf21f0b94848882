"""Validated rubric input: what the services take, the API validates and the admin fills in. The
API's answers (the contract's Rubric shape) are apps.rubrics.api.schemas."""

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, StringConstraints

from apps.bots.schemas import Name, ObjectId, OptText, ShortText
from apps.core.api.validation import ConfigurationIn, NonBlankText, unique_ids
from apps.core.versioning.schemas import input_schemas

MAX_RULES = 500
MAX_CONDITIONS = 100

SeverityName = Literal["high", "medium", "low"]
ScopeName = Literal["prompt", "knowledge_base", "function", "general"]
RuleId = Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")]
Condition = Annotated[NonBlankText, Field(max_length=2000)]


def _none_to_list(value):
    return [] if value is None else value


def _none_to_dict(value):
    return {} if value is None else value


def _blank_scope_to_none(value):
    return None if value == "" else value


class EvaluationCriteria(ConfigurationIn):
    pass_conditions: Annotated[list[Condition], BeforeValidator(_none_to_list), Field(max_length=MAX_CONDITIONS)] = (
        Field(default_factory=list)
    )
    fail_conditions: Annotated[list[Condition], BeforeValidator(_none_to_list), Field(max_length=MAX_CONDITIONS)] = (
        Field(default_factory=list)
    )


class Examples(ConfigurationIn):
    violation: OptText = ""
    correct: OptText = ""


class RuleIn(ConfigurationIn):
    id: RuleId = Field(description="Unique in its rubric, e.g. BRIEF_RESPONSES (letters, digits, _ . : -).")
    name: Name
    severity: SeverityName
    category: Annotated[OptText, Field(max_length=100)] = ""
    description: OptText = ""
    prompt_reference: Annotated[OptText, Field(max_length=500)] = ""
    evaluation_criteria: Annotated[EvaluationCriteria, BeforeValidator(_none_to_dict)] = Field(
        default_factory=EvaluationCriteria
    )
    examples: Annotated[Examples, BeforeValidator(_none_to_dict)] = Field(default_factory=Examples)
    component_scope: Annotated[ScopeName | None, BeforeValidator(_blank_scope_to_none)] = None
    component_ids: Annotated[list[ShortText], BeforeValidator(_none_to_list), Field(max_length=100)] = Field(
        default_factory=list
    )
    component_names: Annotated[list[ShortText], BeforeValidator(_none_to_list), Field(max_length=100)] = Field(
        default_factory=list
    )


class RubricContent(ConfigurationIn):
    """What a version captures; two equal contents are the same version."""

    read_only = frozenset({"rubric_id", "created_at", "updated_at"})

    agent_id: ObjectId
    name: Name
    description: OptText = ""
    severity_definitions: Annotated[dict[SeverityName, OptText], BeforeValidator(_none_to_dict)] = Field(
        default_factory=dict
    )
    rules: Annotated[list[RuleIn], Field(max_length=MAX_RULES), unique_ids("id", what="rule id")] = Field(
        default_factory=list
    )


RubricCreateIn, RubricUpdateIn = input_schemas(RubricContent)
