"""What a bot adapter receives and returns. Adapters see plain data, never ORM rows, so the run
engine, tests and benchmarks can drive any bot the same way."""

from dataclasses import dataclass, field
from typing import Any, Protocol


class BotError(Exception):
    """The bot could not answer: unreachable, timed out, or answered something unusable. The reason
    is shown to reviewers, so it never contains the bot's secret."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class BotTool:
    tool_name: str
    name: str = ""
    type: str = ""
    description: str = ""

    @property
    def is_handoff(self) -> bool:
        return self.type == "human_handoff" or "handoff" in self.tool_name

    @property
    def is_search(self) -> bool:
        return self.type in {"knowledge_base", "kb_search", "search"} or "search" in self.tool_name


@dataclass(frozen=True)
class BotDocument:
    knowledge_base: str
    title: str
    text: str


@dataclass(frozen=True)
class BotSpec:
    agent_id: str
    name: str
    adapter: str
    system_prompt: str = ""
    llm_provider: str = ""
    llm_model: str = ""
    llm_parameters: dict = field(default_factory=dict)
    endpoint_url: str = ""
    secret: str = field(default="", repr=False)
    tools: tuple[BotTool, ...] = ()
    documents: tuple[BotDocument, ...] = ()

    def tool(self, predicate) -> BotTool | None:
        return next((t for t in self.tools if predicate(t)), None)


@dataclass
class ToolCallRecord:
    name: str
    arguments: dict = field(default_factory=dict)
    result: Any = None
    success: bool = True
    error: str | None = None

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result,
            "success": self.success,
            "error": self.error,
        }


@dataclass
class BotTurn:
    reply: str
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    handoff: bool = False
    latency_ms: float = 0.0
    external_trace_id: str | None = None
    usage: dict = field(default_factory=dict)


class BotAdapter(Protocol):
    name: str

    def respond(self, spec: BotSpec, messages: list[dict], *, conversation_id: str) -> BotTurn:
        """Answer the conversation so far (`messages`: role user/assistant, content)."""
