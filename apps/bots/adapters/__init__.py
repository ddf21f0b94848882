"""Bot adapters behind one small registry: how evalsite talks to the bot under test."""

from .base import BotAdapter, BotDocument, BotError, BotSpec, BotTool, BotTurn, ToolCallRecord
from .demo import DemoBotAdapter
from .http import HttpBotAdapter
from .openai_chat import OpenAIBotAdapter

ADAPTERS: dict[str, BotAdapter] = {
    adapter.name: adapter for adapter in (HttpBotAdapter(), OpenAIBotAdapter(), DemoBotAdapter())
}


def get_adapter(name: str) -> BotAdapter:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise BotError(f"unknown bot adapter {name!r}; known: {', '.join(sorted(ADAPTERS))}") from None


__all__ = [
    "ADAPTERS",
    "BotAdapter",
    "BotDocument",
    "BotError",
    "BotSpec",
    "BotTool",
    "BotTurn",
    "ToolCallRecord",
    "get_adapter",
]
