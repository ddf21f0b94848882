"""The `openai` adapter: the bot is a system prompt, an llm_config and tool definitions, run with
chat completions on any OpenAI-compatible server: the bot's own endpoint_url with the bot's own
secret (through the outbound guard), or, without an endpoint_url, the platform's OPENAI_BASE_URL /
OPENAI_API_KEY. The two are never mixed: the platform key never goes to a bot-supplied address.

Tool calls the model makes are recorded. evalsite executes the two kinds it can run itself — a
knowledge-base search (over the bot's stored documents) and a human hand-off — and answers any
other tool with an explicit "not executed" error, so the model sees the truth."""

import json
import time

from apps.core.llm.client import LLMError, bot_endpoint_llm_client, get_llm_client

from .base import BotError, BotSpec, BotTool, BotTurn, ToolCallRecord
from .retrieval import PassageIndex

MAX_TOOL_ROUNDS = 4


def tool_definition(tool: BotTool) -> dict:
    if tool.is_search:
        parameters = {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look up"}},
            "required": ["query"],
        }
    elif tool.is_handoff:
        parameters = {"type": "object", "properties": {"reason": {"type": "string"}}}
    else:
        parameters = {"type": "object", "properties": {}, "additionalProperties": True}
    return {
        "type": "function",
        "function": {"name": tool.tool_name, "description": tool.description or tool.name, "parameters": parameters},
    }


def _execute(spec: BotSpec, name: str, arguments: dict) -> ToolCallRecord:
    tool = spec.tool(lambda t: t.tool_name == name)
    if tool is None:
        return ToolCallRecord(name=name, arguments=arguments, success=False, error=f"the bot has no tool named {name}")
    if tool.is_search:
        passages = PassageIndex(spec.documents).search(str(arguments.get("query", "")), limit=3)
        return ToolCallRecord(
            name=name,
            arguments=arguments,
            result=[{"document": p.document.title, "text": p.text, "score": p.score} for p in passages],
        )
    if tool.is_handoff:
        return ToolCallRecord(name=name, arguments=arguments, result={"status": "transferred"})
    return ToolCallRecord(
        name=name,
        arguments=arguments,
        success=False,
        error=f"evalsite does not execute {tool.type or 'custom'} tools; the call was recorded",
    )


class OpenAIBotAdapter:
    name = "openai"

    def respond(self, spec: BotSpec, messages: list[dict], *, conversation_id: str) -> BotTurn:
        started = time.perf_counter()
        try:
            if spec.endpoint_url:
                client = bot_endpoint_llm_client(
                    endpoint_url=spec.endpoint_url, secret=spec.secret, model=spec.llm_model or None
                )
            else:
                client = get_llm_client(model=spec.llm_model or None)
        except LLMError as exc:
            raise BotError(f"openai bot not configured: {exc.reason}") from None
        chat = ([{"role": "system", "content": spec.system_prompt}] if spec.system_prompt else []) + [
            {"role": m["role"], "content": m["content"]} for m in messages
        ]
        tools = [tool_definition(t) for t in spec.tools] or None
        records: list[ToolCallRecord] = []
        # The turn's LLM calls and tokens, and the model that answered them: what its cost is priced from.
        usage: dict = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "cached_tokens": 0, "calls": 0}
        for _ in range(MAX_TOOL_ROUNDS):
            try:
                result = client.chat(messages=chat, tools=tools, **spec.llm_parameters)
            except LLMError as exc:
                raise BotError(f"openai bot failed: {exc.reason}") from None
            for key in ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens"):
                usage[key] += getattr(result.usage, key)
            usage["calls"] += 1
            usage["model"] = result.model or spec.llm_model
            if not result.tool_calls:
                return BotTurn(
                    reply=result.content or "",
                    tool_calls=records,
                    handoff=False,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    usage=usage,
                )
            chat.append(
                {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                        }
                        for c in result.tool_calls
                    ],
                }
            )
            handed_off = False
            for call in result.tool_calls:
                record = _execute(spec, call["name"], call["arguments"])
                records.append(record)
                name = call["name"]
                handed_off |= record.success and bool(
                    spec.tool(lambda t, name=name: t.tool_name == name and t.is_handoff)
                )
                chat.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": json.dumps(record.result if record.success else {"error": record.error}),
                    }
                )
            if handed_off:
                return BotTurn(
                    reply=result.content or "I'm transferring you to a live agent.",
                    tool_calls=records,
                    handoff=True,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    usage=usage,
                )
        raise BotError(f"the bot kept calling tools for {MAX_TOOL_ROUNDS} rounds without answering")
