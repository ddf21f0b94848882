"""The `http` adapter: evalsite POSTs the conversation so far to the bot's endpoint_url.

Request (JSON):
    {"agent_id": "...", "conversation_id": "...", "messages": [{"role": "user", "content": "..."}, ...]}
    with `Authorization: Bearer <secret>` when the bot has a secret.
Response (JSON, status 200):
    {"reply": "...",
     "tool_calls": [{"name": "search_kb", "arguments": {...}, "result": ..., "success": true, "error": null}],
     "handoff": false,                 # optional: the bot handed the user to a human
     "trace_id": "..."}                # optional: the bot's own trace id (e.g. a LangSmith run id)
"""

import json
import time

from django.conf import settings

from apps.core import outbound

from .base import BotError, BotSpec, BotTurn, ToolCallRecord


def post_conversation(url: str, payload: dict, secret: str, timeout: float) -> outbound.OutboundResponse:
    """The one network call of this adapter. endpoint_url is user-supplied, so it goes through the
    outbound guard (public addresses only, no redirects, capped answer)."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    return outbound.post_json(url, payload, headers=headers, timeout=timeout)


def _tool_call(raw) -> ToolCallRecord:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise BotError("bot answered a tool call without a string 'name'")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise BotError(f"bot answered non-object arguments for tool call {raw['name']}")
    success = raw.get("success", True)
    return ToolCallRecord(
        name=raw["name"], arguments=arguments, result=raw.get("result"), success=bool(success), error=raw.get("error")
    )


class HttpBotAdapter:
    name = "http"

    def respond(self, spec: BotSpec, messages: list[dict], *, conversation_id: str) -> BotTurn:
        if not spec.endpoint_url:
            raise BotError("bot has no endpoint_url for the http adapter")
        payload = {"agent_id": spec.agent_id, "conversation_id": conversation_id, "messages": messages}
        started = time.perf_counter()
        timeout = settings.EVALSITE_BOT_TIMEOUT_SECONDS
        try:
            response = post_conversation(spec.endpoint_url, payload, spec.secret, timeout)
        except outbound.OutboundRefused as exc:
            raise BotError(f"bot endpoint refused: {exc.reason}") from None
        except outbound.OutboundTimeout:
            raise BotError(f"bot did not answer within {timeout} s") from None
        except outbound.OutboundError as exc:
            raise BotError(f"bot unreachable or unusable: {exc.reason}") from None
        latency_ms = (time.perf_counter() - started) * 1000
        # Whatever answered may be an internal service: errors describe the answer, never quote it.
        if response.status_code != 200:
            raise BotError(f"bot answered {response.describe()}")
        try:
            body = json.loads(response.content)
        except ValueError:
            raise BotError(f"bot answered something that is not JSON: {response.describe()}") from None
        if not isinstance(body, dict) or not isinstance(body.get("reply"), str):
            raise BotError("bot answer has no string 'reply'")
        raw_calls = body.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise BotError("bot answer's 'tool_calls' is not a list")
        trace_id = body.get("trace_id")
        return BotTurn(
            reply=body["reply"],
            tool_calls=[_tool_call(c) for c in raw_calls],
            handoff=bool(body.get("handoff", False)),
            latency_ms=latency_ms,
            external_trace_id=trace_id if isinstance(trace_id, str) else None,
        )
