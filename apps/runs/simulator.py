"""Drive a conversation with the bot under test: one message, or a persona played for several turns.

A scenario starts with the item's initial_message. After each bot turn the simulated user either
says the next thing or stops; the conversation also stops when the bot hands off to a human or
max_turns bot turns have happened. Without an LLM, the simulated user speaks the item's
`inputs.scripted_turns` in order and stops when they run out (no script: a single turn)."""

from dataclasses import dataclass, field
from typing import Protocol

from apps.bots.adapters import BotAdapter, BotSpec, BotTurn


class SimulatedUser(Protocol):
    label: str

    def next_message(self, *, persona: str, messages: list[dict]) -> str | None:
        """The user's next message, or None when the user's goal is met or they have nothing to add."""


class ScriptedUser:
    label = "scripted"

    def __init__(self, turns: list[str] | None):
        self._turns = list(turns or [])

    def next_message(self, *, persona: str, messages: list[dict]) -> str | None:
        return self._turns.pop(0) if self._turns else None


@dataclass
class Conversation:
    messages: list[dict] = field(default_factory=list)
    turns: list[BotTurn] = field(default_factory=list)
    stopped_because: str = ""

    @property
    def tool_calls(self) -> list[dict]:
        return [{**call.as_dict(), "turn": n} for n, turn in enumerate(self.turns, start=1) for call in turn.tool_calls]

    @property
    def external_trace_id(self) -> str | None:
        return next((t.external_trace_id for t in self.turns if t.external_trace_id), None)


def _bot_turn(adapter: BotAdapter, spec: BotSpec, conversation: Conversation, conversation_id: str) -> BotTurn:
    turn = adapter.respond(spec, [dict(m) for m in conversation.messages], conversation_id=conversation_id)
    conversation.turns.append(turn)
    conversation.messages.append(
        {"role": "assistant", "content": turn.reply, "tool_calls": [c.as_dict() for c in turn.tool_calls]}
    )
    return turn


def run_single_turn(*, adapter: BotAdapter, spec: BotSpec, message: str, conversation_id: str) -> Conversation:
    conversation = Conversation(messages=[{"role": "user", "content": message}])
    _bot_turn(adapter, spec, conversation, conversation_id)
    conversation.stopped_because = "single_turn"
    return conversation


def run_scenario(
    *,
    adapter: BotAdapter,
    spec: BotSpec,
    persona: str,
    initial_message: str,
    max_turns: int,
    user: SimulatedUser,
    conversation_id: str,
) -> Conversation:
    conversation = Conversation(messages=[{"role": "user", "content": initial_message}])
    while True:
        turn = _bot_turn(adapter, spec, conversation, conversation_id)
        if turn.handoff:
            conversation.stopped_because = "handoff"
            break
        if len(conversation.turns) >= max_turns:
            conversation.stopped_because = "max_turns"
            break
        visible = [{"role": m["role"], "content": m["content"]} for m in conversation.messages]
        message = user.next_message(persona=persona, messages=visible)
        if message is None:
            conversation.stopped_because = "goal_met" if user.label != "scripted" else "script_exhausted"
            break
        conversation.messages.append({"role": "user", "content": message})
    return conversation
