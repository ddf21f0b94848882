"""The bot API's answers: Out models reading the rows (from_attributes) of a Bot prefetched by
selectors.bot_get / bot_list, its tools, and its knowledge bases annotated with document_count. The
input the services take is apps.bots.schemas."""

from datetime import datetime
from typing import Annotated

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, RootModel

from apps.core.api.attributes import RelatedRows

from ..schemas import AdapterName


class LlmConfigOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    provider: str
    model: str
    parameters: dict


# A component's `id` is its component_id (apps.bots.models.BotTool): the row's key is never shown.
ComponentId = Annotated[str, Field(validation_alias="component_id")]


class ToolOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: ComponentId
    name: str
    tool_name: str
    type: str
    description: str
    output_instructions: str


class KnowledgeBaseOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: ComponentId
    name: str
    type: str
    document_count: int


class BotOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    agent_id: str
    name: str
    organization_id: str
    organization_name: str
    system_prompt: str
    llm_config: LlmConfigOut
    harness_context: dict
    adapter: AdapterName
    endpoint_url: str
    has_secret: bool = Field(description="Whether a secret is stored; the secret itself is never returned.")
    tools: RelatedRows[ToolOut]
    knowledge_bases: RelatedRows[KnowledgeBaseOut]
    created_at: datetime
    updated_at: datetime


class BotContextOut(BaseModel):
    """The contract's BotContext: the bot under the contract's names (bot_id, bot_name)."""

    model_config = ConfigDict(from_attributes=True)
    bot_id: str = Field(validation_alias=AliasChoices("bot_id", "agent_id"))
    bot_name: str = Field(validation_alias=AliasChoices("bot_name", "name"))
    organization_id: str
    organization_name: str
    system_prompt: str
    llm_config: LlmConfigOut
    tools: RelatedRows[ToolOut]
    knowledge_bases: RelatedRows[KnowledgeBaseOut]
    harness_context: dict


class DocumentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    title: str
    text: str


class KnowledgeBaseDocumentsOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: ComponentId
    name: str
    type: str
    documents: RelatedRows[DocumentOut]


class BotListOut(RootModel[list[BotOut]]):
    pass


class OfBotQuery(BaseModel):
    """The query of a list of rows that belong to a bot (rubrics, test sets, question sets): it
    validates and documents `agent_id`; apps.bots.filters.OfBotFilter filters by the validated
    values (`model_dump(exclude_none=True)`). Each list's subclass says what it lists."""

    agent_id: str | None = None
