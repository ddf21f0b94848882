import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel, StrictInt, StrictStr

from apps.core.validation import Identifier
from apps.runs.services import MAX_REVIEW_NOTE

AgentId = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{24}$", description="mongodb-objectid: 24 hex characters")]


class RunCreateIn(BaseModel):
    agent_id: AgentId
    test_set_id: uuid.UUID | None = None
    test_set_version: Annotated[StrictInt, Field(ge=1)] | None = None
    dataset_id: uuid.UUID | None = None
    rubric_id: uuid.UUID | None = None
    rubric_version: Annotated[StrictInt, Field(ge=1)] | None = None
    concurrency: Annotated[StrictInt, Field(ge=1, le=32)] = 3
    component_scope_filter: Literal["prompt", "knowledge_base", "function", "general"] | None = None
    component_ids_filter: Annotated[list[Identifier], Field(max_length=100)] | None = None
    judge_model: Identifier | None = Field(default=None, description='"heuristic", or an LLM model name')


class ComponentScore(BaseModel):
    score: float
    total: int
    passed: int


class RunOut(BaseModel):
    run_id: uuid.UUID
    dataset_id: uuid.UUID | None
    agent_id: str
    status: Literal["pending", "running", "completed", "failed", "cancelled"]
    total: int
    completed: int
    passed: int
    failed: int
    concurrency: int
    started_at: datetime | None
    completed_at: datetime | None
    error: str | None
    rubric_id: uuid.UUID | None
    rubric_version: int | None
    test_set_id: uuid.UUID | None
    test_set_version: int | None
    component_scope_filter: str | None
    component_ids_filter: list[str]
    component_scores: dict[str, ComponentScore] | None
    criteria_passed: int
    criteria_total: int
    rubric_rules_passed: int
    rubric_rules_total: int
    rubric_rules_skipped: int
    bot_llm_provider: str
    bot_llm_model: str
    judge: str
    created_at: datetime


class CriterionScore(BaseModel):
    criterion: str
    passed: bool | None
    score: float | None
    reasoning: str
    status: Literal["ok", "skipped", "error"]
    judge: str
    kind: str


class RubricScore(BaseModel):
    rule_id: str
    rule_name: str
    severity: str
    passed: bool | None
    score: float | None
    reasoning: str
    status: Literal["ok", "skipped", "error"]
    judge: str
    component_scope: str | None


class ResultOut(BaseModel):
    result_id: uuid.UUID
    run_id: uuid.UUID
    test_case_id: uuid.UUID
    langsmith_run_id: str | None
    input: dict[str, Any]
    output: dict[str, Any] | None
    scores: dict[str, Any] | None
    item_name: str
    item_type: str
    criteria_scores: list[CriterionScore] | None
    criteria_passed: bool | None
    rubric_scores: list[RubricScore] | None
    rubric_passed: bool | None
    passed: bool | None
    duration_ms: int | None
    error: str | None
    created_at: datetime


class ReviewIn(BaseModel):
    kind: Literal["criterion", "rule"]
    key: Annotated[StrictStr, Field(min_length=1, max_length=1000,
                                    description="the criterion's text, or the rule's rule_id")]
    passed: bool = Field(strict=True)
    note: Annotated[StrictStr, Field(max_length=MAX_REVIEW_NOTE)] = ""


class ReviewOut(BaseModel):
    review_id: uuid.UUID
    result_id: uuid.UUID
    kind: Literal["criterion", "rule"]
    key: str
    passed: bool
    note: str
    judge_passed: bool | None = Field(description="the judge's verdict when reviewed; null if it errored or skipped")
    judge_status: Literal["ok", "skipped", "error"]
    judge: str
    reviewer: str
    in_force: bool = Field(description="the newest review of this verdict, the one the human figures use")
    created_at: datetime


class ReviewList(RootModel[list[ReviewOut]]):
    pass


class ResultDetailOut(ResultOut):
    human_passed: bool | None = Field(description="passed, with the reviews in force applied")
    reviews: list[ReviewOut]


class RunList(RootModel[list[RunOut]]):
    pass


class ResultList(RootModel[list[ResultOut]]):
    pass
