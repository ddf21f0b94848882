"""The built-in `demo` bot: offline and reproducible.

For every user message it either hands off (when the user asks for a person and the bot has a
handoff tool) or calls its knowledge-base search tool and answers from a passage it found. It
answers only from what its documents say, and says so when they say nothing relevant.

Four settings in the bot's LLM parameters (`llm_parameters`) change how it answers, so that two
configurations of one bot answer differently, as two versions of a real bot would:

- `min_score` (default 1.0): the BM25 score a passage needs to be used; below it the bot says it
  found nothing. Higher is stricter: fewer weak matches, more "I couldn't find anything".
- `max_sentences` (default: no limit): answer with at most this many sentences of the passage, the
  ones sharing the most (IDF-weighted) words with the question, in the passage's order.
- `temperature` (default 0): 0 always answers from the best passage. Above 0 the bot draws the
  passage from the ones that clear `min_score` (the best three at most), each weighted by
  exp((score - best score) / temperature), as a language model samples its next token: close
  seconds get picked now and then, distant ones practically never.
- `handoff_when_nothing_found` (default false): when no passage clears `min_score`, hand the
  conversation to a person (the handoff tool) instead of only saying nothing was found.

The draw is seeded, never random: its seed is the conversation id without its first segment and
the turn number. The run engine names a conversation `<run id>:<test case id>[:<attempt>]`, so
attempt k of an item draws the same numbers in every run: a run is reproducible, while the
attempts of one item (different seeds) may disagree, which is what repeats are for.
"""

import hashlib
import math
import re
import time
from functools import lru_cache

from .base import BotSpec, BotTurn, ToolCallRecord
from .retrieval import TEXT, Passage, PassageIndex

HUMAN_REQUEST = re.compile(
    r"\b(human|real person|live agent|representative|speak to (an? )?(agent|person|someone))\b", re.IGNORECASE
)
# A passage must share at least this much BM25 weight with the question to be used as an answer.
MIN_SCORE = 1.0
# How many of the best passages a temperature above 0 may draw from.
DRAW_FROM = 3
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
NOTHING_FOUND = (
    "I couldn't find anything about that in our knowledge base. Would you like me to connect you with a person?"
)
NOTHING_FOUND_HANDOFF = (
    "I couldn't find anything about that in our knowledge base, so I'm connecting you with a live agent who can help."
)


@lru_cache(maxsize=32)
def _index(documents) -> PassageIndex:
    return PassageIndex(documents)


def seeded_draw(conversation_id: str, turn: int) -> float:
    """A number in [0, 1) fixed by the conversation (without its first segment, the run id) and turn."""
    _run, sep, rest = conversation_id.partition(":")
    key = f"{rest if sep else conversation_id}\x00{turn}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def _setting(parameters: dict, name: str, default: float, kind=float):
    try:
        return kind(parameters.get(name, default))
    except (TypeError, ValueError):
        return default


def choose_passage(candidates: list[Passage], *, temperature: float, draw: float) -> Passage:
    """The best candidate at temperature 0; otherwise one drawn with weights exp((score - best) / T)."""
    if temperature <= 0 or len(candidates) == 1:
        return candidates[0]
    best = candidates[0].score
    weights = [math.exp((c.score - best) / temperature) for c in candidates]
    point, total = draw * sum(weights), 0.0
    for candidate, weight in zip(candidates, weights, strict=True):
        total += weight
        if point < total:
            return candidate
    return candidates[-1]


def shortened(text: str, question: str, *, max_sentences: int, idf: dict) -> str:
    """At most `max_sentences` sentences of `text`: those sharing the most IDF weight with the
    question (the earlier on a tie), kept in their order."""
    sentences = [s for s in SENTENCE_END.split(text.strip()) if s]
    if len(sentences) <= max_sentences:
        return text
    asked = set(TEXT.tokens(question))
    weight = [sum(idf.get(t, 0.0) for t in asked & set(TEXT.tokens(s))) for s in sentences]
    kept = sorted(sorted(range(len(sentences)), key=lambda i: (-weight[i], i))[:max_sentences])
    return " ".join(sentences[i] for i in kept)


class DemoBotAdapter:
    name = "demo"

    def respond(self, spec: BotSpec, messages: list[dict], *, conversation_id: str) -> BotTurn:
        started = time.perf_counter()
        question = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        handoff_tool = spec.tool(lambda t: t.is_handoff)
        if handoff_tool and HUMAN_REQUEST.search(question):
            call = ToolCallRecord(
                name=handoff_tool.tool_name, arguments={"reason": question[:200]}, result={"status": "transferred"}
            )
            return BotTurn(
                reply="I'm connecting you with a live agent now; they will pick up this conversation.",
                tool_calls=[call],
                handoff=True,
                latency_ms=(time.perf_counter() - started) * 1000,
            )

        search_tool = spec.tool(lambda t: t.is_search)
        if search_tool is None:
            return BotTurn(
                reply="I don't have a knowledge base to look that up in.",
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        parameters = spec.llm_parameters or {}
        index = _index(spec.documents)
        passages = index.search(question, limit=DRAW_FROM)
        call = ToolCallRecord(
            name=search_tool.tool_name,
            arguments={"query": question},
            result=[{"document": p.document.title, "text": p.text, "score": p.score} for p in passages],
        )
        candidates = [p for p in passages if p.score >= _setting(parameters, "min_score", MIN_SCORE)]
        if not candidates and handoff_tool and parameters.get("handoff_when_nothing_found") is True:
            handoff = ToolCallRecord(
                name=handoff_tool.tool_name,
                result={"status": "transferred"},
                arguments={"reason": "nothing found in the knowledge base"},
            )
            return BotTurn(
                reply=NOTHING_FOUND_HANDOFF,
                tool_calls=[call, handoff],
                handoff=True,
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        if not candidates:
            reply = NOTHING_FOUND
        else:
            turn = sum(1 for m in messages if m["role"] == "user")
            chosen = choose_passage(
                candidates,
                temperature=_setting(parameters, "temperature", 0.0),
                draw=seeded_draw(conversation_id, turn),
            )
            text = chosen.text
            max_sentences = _setting(parameters, "max_sentences", 0, int)
            if max_sentences > 0:
                text = shortened(text, question, max_sentences=max_sentences, idf=index.idf)
            reply = f"According to {chosen.document.title}: {text}"
        return BotTurn(reply=reply, tool_calls=[call], latency_ms=(time.perf_counter() - started) * 1000)
