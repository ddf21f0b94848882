"""The built-in `demo` bot: offline and deterministic.

For every user message it either hands off (when the user asks for a person and the bot has a
handoff tool) or calls its knowledge-base search tool and answers from the best passage. It
answers only from what its documents say, and says so when they say nothing relevant."""

import re
import time
from functools import lru_cache

from .retrieval import PassageIndex
from .base import BotSpec, BotTurn, ToolCallRecord

HUMAN_REQUEST = re.compile(r"\b(human|real person|live agent|representative|speak to (an? )?(agent|person|someone))\b",
                           re.IGNORECASE)
# A passage must share at least this much BM25 weight with the question to be used as an answer.
MIN_SCORE = 1.0


@lru_cache(maxsize=32)
def _index(documents) -> PassageIndex:
    return PassageIndex(documents)


class DemoBotAdapter:
    name = "demo"

    def respond(self, spec: BotSpec, messages: list[dict], *, conversation_id: str) -> BotTurn:
        started = time.perf_counter()
        question = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        handoff_tool = spec.tool(lambda t: t.is_handoff)
        if handoff_tool and HUMAN_REQUEST.search(question):
            call = ToolCallRecord(name=handoff_tool.tool_name, arguments={"reason": question[:200]},
                                  result={"status": "transferred"})
            return BotTurn(reply="I'm connecting you with a live agent now; they will pick up this conversation.",
                           tool_calls=[call], handoff=True, latency_ms=(time.perf_counter() - started) * 1000)

        search_tool = spec.tool(lambda t: t.is_search)
        if search_tool is None:
            return BotTurn(reply="I don't have a knowledge base to look that up in.",
                           latency_ms=(time.perf_counter() - started) * 1000)
        passages = _index(spec.documents).search(question, limit=3)
        call = ToolCallRecord(
            name=search_tool.tool_name,
            arguments={"query": question},
            result=[{"document": p.document.title, "text": p.text, "score": p.score} for p in passages],
        )
        best = passages[0] if passages and passages[0].score >= MIN_SCORE else None
        if best is None:
            reply = "I couldn't find anything about that in our knowledge base. Would you like me to connect you with a person?"
        else:
            reply = f"According to {best.document.title}: {best.text}"
        return BotTurn(reply=reply, tool_calls=[call], latency_ms=(time.perf_counter() - started) * 1000)
