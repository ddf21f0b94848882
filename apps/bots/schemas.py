"""Validated input of bots, with the field types rubrics and test sets share: what the services take,
the API validates and the admin fills in. The API's answers are apps.bots.api.schemas."""

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StringConstraints,
    model_validator,
)

from apps.core.api.validation import ConfigurationIn, Identifier, JsonObject, NonBlankText, Text


def _none_to_blank(value):
    return "" if value is None else value


ObjectId = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{24}$")]
OptText = Annotated[Text, BeforeValidator(_none_to_blank)]
ShortText = Annotated[OptText, Field(max_length=255)]
Name = Annotated[NonBlankText, Field(max_length=255)]
AdapterName = Literal["http", "openai", "demo"]

MAX_TOOLS = 200
MAX_KNOWLEDGE_BASES = 100
MAX_DOCUMENTS = 2000


def _http_url(value: str) -> str:
    if value and not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value


class LlmConfig(ConfigurationIn):
    provider: ShortText = ""
    model: ShortText = ""
    parameters: JsonObject = Field(default_factory=dict)


class ToolIn(ConfigurationIn):
    id: ObjectId | None = None
    name: Name
    tool_name: Identifier
    type: ShortText = ""
    description: OptText = ""
    output_instructions: OptText = ""


class DocumentIn(ConfigurationIn):
    title: Annotated[NonBlankText, Field(max_length=500)]
    text: NonBlankText


class KnowledgeBaseIn(ConfigurationIn):
    read_only = frozenset({"document_count"})
    id: ObjectId | None = None
    name: Name
    type: ShortText = "file"
    documents: Annotated[list[DocumentIn], Field(max_length=MAX_DOCUMENTS)] | None = Field(
        default=None, description="The documents; on update, omit to keep the stored ones."
    )


class BotIn(ConfigurationIn):
    read_only = frozenset({"has_secret", "created_at", "updated_at"})
    agent_id: ObjectId | None = Field(default=None, description="24 hex characters; generated when omitted.")
    name: Name
    organization_id: Annotated[OptText, Field(max_length=24)] = ""
    organization_name: ShortText = ""
    system_prompt: OptText = ""
    llm_config: LlmConfig = Field(default_factory=LlmConfig)
    harness_context: JsonObject = Field(default_factory=dict)
    adapter: AdapterName = "demo"
    endpoint_url: Annotated[OptText, Field(max_length=2000), AfterValidator(_http_url)] = ""
    secret: Annotated[Text, Field(max_length=4000)] | None = Field(
        default=None,
        description="Write-only credential sent to the bot (stored encrypted); on update, omit to keep the "
        "stored one. A change of adapter or endpoint_url drops the stored secret unless it is sent again. "
        "An openai bot with its own endpoint_url needs one.",
    )
    tools: Annotated[list[ToolIn], Field(max_length=MAX_TOOLS)] = Field(default_factory=list)
    knowledge_bases: Annotated[list[KnowledgeBaseIn], Field(max_length=MAX_KNOWLEDGE_BASES)] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _consistent(self):
        if self.adapter == "http" and not self.endpoint_url:
            raise ValueError("endpoint_url is required for the http adapter")
        names = [t.tool_name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate tool_name: {', '.join(duplicates)}")
        for field_name, ids in (
            ("tools", [t.id for t in self.tools]),
            ("knowledge_bases", [k.id for k in self.knowledge_bases]),
        ):
            given = [i for i in ids if i]
            if len(given) != len(set(given)):
                raise ValueError(f"duplicate id in {field_name}")
        return self


# The answers read the rows (from_attributes): a Bot prefetched by selectors.bot_get / bot_list,
# its tools, and its knowledge bases annotated with document_count.
