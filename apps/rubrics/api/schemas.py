"""The rubric API's answers and list query: the contract's Rubric shape for output and the OpenAPI schema. The
input the services take (and the API validates) is apps.rubrics.schemas.

The Out models take what a stored version holds with the types the document shows, not the input
limits: a limit tightened later must not make an older version unreadable."""

from datetime import datetime

from pydantic import BaseModel, Field, RootModel

from apps.bots.api.schemas import OfBotQuery

from ..schemas import ScopeName, SeverityName


# The Out models take what a stored version holds with the types the document shows, not the
# input limits: a limit tightened later must not make an older version unreadable.
class EvaluationCriteriaOut(BaseModel):
    pass_conditions: list[str] = Field(default_factory=list)
    fail_conditions: list[str] = Field(default_factory=list)


class ExamplesOut(BaseModel):
    violation: str = ""
    correct: str = ""


class RuleOut(BaseModel):
    id: str
    name: str
    severity: SeverityName
    category: str = ""
    description: str = ""
    prompt_reference: str = ""
    evaluation_criteria: EvaluationCriteriaOut = Field(default_factory=EvaluationCriteriaOut)
    examples: ExamplesOut = Field(default_factory=ExamplesOut)
    component_scope: ScopeName | None = None
    component_ids: list[str] = Field(default_factory=list)
    component_names: list[str] = Field(default_factory=list)


class RubricOut(BaseModel):
    rubric_id: str
    agent_id: str
    version: int
    name: str
    description: str
    severity_definitions: dict[str, str]
    rules: list[RuleOut]
    created_at: datetime
    updated_at: datetime


class RubricVersionOut(RubricOut):
    changelog: str
    author: str


class RubricVersionSummaryOut(BaseModel):
    rubric_id: str
    version: int
    changelog: str
    author: str
    rule_count: int
    created_at: datetime


class RubricListOut(RootModel[list[RubricOut]]):
    pass


class RubricVersionListOut(RootModel[list[RubricVersionSummaryOut]]):
    pass


class RubricListQuery(OfBotQuery):
    agent_id: str | None = Field(default=None, description="Only this bot's rubrics.")
