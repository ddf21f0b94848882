"""Validated test set and question set input: what the services take, the API validates and the
admin fills in. The API's answers (the contract's TestSet shape) are apps.testsets.api.schemas."""

import uuid
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from apps.bots.schemas import Name, ObjectId, OptText, ShortText
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
    source_session_id: Annotated[str, Field(min_length=1, max_length=255)] | None = Field(
        default=None, description="The trace (session id) the item was made from; kept across versions when sent."
    )
    source_result_id: uuid.UUID | None = Field(default=None, description="The run result the item was made from.")

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


MAX_FROM_TRACES = 500
SessionId = Annotated[str, Field(min_length=1, max_length=255)]


class FromTraceIn(ConfigurationIn):
    """One trace to become a test item, with what it should have done."""

    session_id: SessionId
    expected_outcome: OptText = ""
    success_criteria: _list_of(Criterion) = Field(default_factory=list)


class FromTracesIn(ConfigurationIn):
    """POST /test-sets/{id}/items/from-traces: `session_ids` with one expected outcome and criteria
    for all of them, or `items`, each with its own. `version` (or If-Match) makes it conditional on
    the test set's current version."""

    session_ids: Annotated[list[SessionId], Field(min_length=1, max_length=MAX_FROM_TRACES)] | None = None
    expected_outcome: OptText = ""
    success_criteria: _list_of(Criterion) = Field(default_factory=list)
    items: Annotated[list[FromTraceIn], Field(min_length=1, max_length=MAX_FROM_TRACES)] | None = None
    version: Annotated[int, Field(ge=1, strict=True)] | None = None
    changelog: Annotated[OptText, Field(max_length=2000)] = ""

    @model_validator(mode="after")
    def _one_form(self):
        if (self.session_ids is None) == (self.items is None):
            raise ValueError(
                "send either session_ids (with an optional shared expected_outcome and "
                "success_criteria) or items, not both"
            )
        if self.items is not None and (self.expected_outcome or self.success_criteria):
            raise ValueError("with items, each item carries its own expected_outcome and success_criteria")
        ids = [r.session_id for r in self.requests()]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"session ids listed more than once: {', '.join(twice)}")
        return self

    def requests(self) -> list[FromTraceIn]:
        if self.items is not None:
            return list(self.items)
        return [
            FromTraceIn(
                session_id=session_id,
                expected_outcome=self.expected_outcome,
                success_criteria=list(self.success_criteria),
            )
            for session_id in self.session_ids or []
        ]
