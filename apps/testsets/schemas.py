"""Validated test set and question set input, and the contract's TestSet shape."""

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field, RootModel, model_validator

from apps.bots.schemas import Name, ObjectId, OptText, ShortText
from apps.core.api.responses import absent_if_none
from apps.core.api.validation import ConfigurationIn, Identifier, NonBlankText, unique_ids
from apps.core.versioning.schemas import input_schemas

from .models import DEFAULT_MAX_TURNS

MAX_ITEMS = 5000
MAX_LIST = 100
MAX_QUESTIONS = 5000


def _none_to_list(value):
    return [] if value is None else value


def _none_to_dict(value):
    return {} if value is None else value


ItemType = Literal["single_turn", "scenario"]
PriorityName = Literal["high", "medium", "low"]
Criterion = Annotated[NonBlankText, Field(max_length=2000)]
ToolName = Annotated[Identifier, Field(max_length=255)]


def _list_of(item_type, max_length=MAX_LIST):
    return Annotated[list[item_type], BeforeValidator(_none_to_list), Field(max_length=max_length)]


class InputsIn(ConfigurationIn):
    message: OptText = ""
    persona: OptText = ""
    initial_message: OptText = ""
    max_turns: Annotated[int, Field(ge=1, le=50, strict=True)] | None = None
    scripted_turns: _list_of(Annotated[NonBlankText, Field(max_length=10000)], 50) = Field(
        default_factory=list,
        description="Scenario only: user turns the simulator sends in order instead of improvising.",
    )


class ExpectedIn(ConfigurationIn):
    success_criteria: _list_of(Criterion) = Field(default_factory=list)
    should_use_tools: _list_of(ToolName) = Field(default_factory=list)
    should_not_use_tools: _list_of(ToolName) = Field(default_factory=list)
    expected_outcome: OptText = ""


class ItemIn(ConfigurationIn):
    item_id: uuid.UUID | None = Field(default=None, description="Kept across versions; generated when omitted.")
    type: ItemType
    name: Name
    inputs: Annotated[InputsIn, BeforeValidator(_none_to_dict)] = Field(default_factory=InputsIn)
    expected: Annotated[ExpectedIn, BeforeValidator(_none_to_dict)] = Field(default_factory=ExpectedIn)
    tags: _list_of(ShortText) = Field(default_factory=list)
    priority: PriorityName = "medium"

    @model_validator(mode="after")
    def _inputs_fit_type(self):
        if self.type == "single_turn":
            if not self.inputs.message.strip():
                raise ValueError("a single_turn item needs inputs.message")
        else:
            missing = [
                f"inputs.{name}" for name in ("persona", "initial_message") if not getattr(self.inputs, name).strip()
            ]
            if missing:
                raise ValueError(f"a scenario item needs {' and '.join(missing)}")
            if self.inputs.max_turns is None:
                self.inputs.max_turns = DEFAULT_MAX_TURNS
        return self


class TestSetContent(ConfigurationIn):
    read_only = frozenset({"test_set_id", "created_at", "updated_at", "warnings"})

    agent_id: ObjectId
    name: Name
    description: OptText = ""
    items: Annotated[list[ItemIn], Field(max_length=MAX_ITEMS), unique_ids("item_id", what="item_id")] = Field(
        default_factory=list
    )


TestSetCreateIn, TestSetUpdateIn = input_schemas(TestSetContent)


class InputsOut(BaseModel):
    """The inputs an item's type uses, and any other one that was filled in; the rest are absent."""

    message: str | None = absent_if_none()
    persona: str | None = absent_if_none()
    initial_message: str | None = absent_if_none()
    max_turns: int | None = absent_if_none()
    scripted_turns: list[str] | None = absent_if_none()


# Like InputsOut: the stored shape with the document's types, not the input limits (a limit
# tightened later must not make an older version unreadable).
class ExpectedOut(BaseModel):
    success_criteria: list[str] = Field(default_factory=list)
    should_use_tools: list[str] = Field(default_factory=list)
    should_not_use_tools: list[str] = Field(default_factory=list)
    expected_outcome: str = ""


class ItemOut(BaseModel):
    item_id: str
    type: ItemType
    name: str
    inputs: InputsOut
    expected: ExpectedOut
    tags: list[str]
    priority: PriorityName


class TestSetOut(BaseModel):
    test_set_id: str
    agent_id: str
    version: int
    name: str
    description: str
    items: list[ItemOut]
    created_at: datetime
    updated_at: datetime


class TestSetSavedOut(TestSetOut):
    warnings: list[str] = Field(
        description="Problems that do not block saving, e.g. should_use_tools naming a tool the bot does not have."
    )


class TestSetVersionOut(TestSetOut):
    changelog: str
    author: str


class TestSetVersionSummaryOut(BaseModel):
    test_set_id: str
    version: int
    changelog: str
    author: str
    item_count: int
    created_at: datetime


class QuestionIn(ConfigurationIn):
    question_id: uuid.UUID | None = None
    question: NonBlankText
    expected_answer: OptText = ""


class DatasetIn(ConfigurationIn):
    read_only = frozenset({"dataset_id", "created_at", "updated_at"})
    name: Name
    description: OptText = ""
    agent_id: ObjectId | None = None
    questions: Annotated[
        list[QuestionIn], Field(max_length=MAX_QUESTIONS), unique_ids("question_id", what="question_id")
    ] = Field(default_factory=list)


class QuestionOut(BaseModel):
    question_id: str
    question: str
    expected_answer: str


class DatasetOut(BaseModel):
    dataset_id: str
    name: str
    description: str
    agent_id: str | None
    questions: list[QuestionOut]
    created_at: datetime
    updated_at: datetime


class TestSetListOut(RootModel[list[TestSetOut]]):
    pass


class TestSetVersionListOut(RootModel[list[TestSetVersionSummaryOut]]):
    pass


class DatasetListOut(RootModel[list[DatasetOut]]):
    pass
