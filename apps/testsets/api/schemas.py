"""The test set and question set API's answers and query models: the contract's TestSet shape for output and the
OpenAPI schema. The input the services take (and the API validates) is apps.testsets.schemas."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field, RootModel

from apps.bots.api.schemas import OfBotQuery
from apps.core.api.responses import absent_if_none

from .. import transfer
from ..schemas import ItemType, PriorityName


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
    source_session_id: str | None = absent_if_none("The trace (session id) the item was made from.")
    source_result_id: str | None = absent_if_none("The run result the item was made from.")


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


class TestSetListQuery(OfBotQuery):
    agent_id: str | None = Field(default=None, description="Only this bot's test sets.")


class DatasetListQuery(OfBotQuery):
    agent_id: str | None = Field(default=None, description="Only this bot's question sets.")


def _blank_as_absent(value):
    # `?format=` or `?version=` with nothing after it means the default, as if left out.
    return None if value == "" else value


def _file_format(value):
    # transfer's own refusal (a domain error, so not caught as a field error) names the formats.
    value = _blank_as_absent(value)
    return None if value is None else transfer.format_for(value)


FileFormat = Annotated[Literal[tuple(transfer.FORMATS)] | None, BeforeValidator(_file_format)]
_FORMAT_DOC = "File format; for import, defaults from the Content-Type."


class ExportQuery(BaseModel):
    format: FileFormat = Field(default=None, description=_FORMAT_DOC)
    version: Annotated[int | None, BeforeValidator(_blank_as_absent)] = Field(
        default=None, description="Defaults to the current version."
    )


class ImportVersionQuery(BaseModel):
    format: FileFormat = Field(default=None, description=_FORMAT_DOC)


class ImportQuery(ImportVersionQuery):
    agent_id: str | None = Field(default=None, description="Required unless the JSON file names it.")
    name: str | None = Field(default=None, description="Required unless the JSON file names it.")
    description: str | None = None
