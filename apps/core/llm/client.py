"""The LLM client: the only module of evalsite that imports `openai`.

Any OpenAI-compatible server works (OpenAI, Azure OpenAI's v1 endpoint, Ollama, vLLM, LiteLLM):
OPENAI_BASE_URL and OPENAI_API_KEY pick it, EVALSITE_JUDGE_MODEL the model. Every call has an
explicit timeout and at most MAX_ATTEMPTS attempts, with exponential backoff on 429, 5xx, timeouts
and connection errors. Structured output asks for `response_format: json_schema`; a server that
rejects that gets `json_object` with the schema in the prompt from then on. Replies are parsed
tolerantly (code fences, text around the object) and validated with the caller's pydantic model;
an unparseable reply is retried like a transport error, unless the caller's contract forbids
re-asking the model (`retry_unusable_reply=False`: one answer, transport retries only). When every
attempt fails the caller gets LLMError with the reason: nothing here ever invents a result.

`openai` is imported inside the functions that use it: importing it takes about 0.4 s, which every
process loading this module (every manage.py command, `evalrun --help` included) would pay.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from pydantic import BaseModel, ValidationError

from apps.core import outbound
from apps.core.llm import usage

if TYPE_CHECKING:
    # For annotations only (they are strings at run time, see `from __future__` above); the code
    # imports openai lazily inside the functions.
    import httpx
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class LLMError(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class LLMNotConfigured(LLMError):
    pass


@dataclass
class LLMUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    # Of prompt_tokens, those the provider served from its prompt cache (priced lower: apps.core.pricing).
    cached_tokens: int = 0

    def add(self, usage) -> None:
        if usage is not None:
            self.prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
            self.completion_tokens += getattr(usage, "completion_tokens", 0) or 0
            self.total_tokens += getattr(usage, "total_tokens", 0) or 0
            details = getattr(usage, "prompt_tokens_details", None)
            cached = getattr(details, "cached_tokens", 0) if details is not None else 0
            self.cached_tokens += cached if isinstance(cached, int) else 0

    def as_dict(self) -> dict:
        # cached_tokens only where some were cached: the stored usage of every other call keeps its shape.
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            **({"cached_tokens": self.cached_tokens} if self.cached_tokens else {}),
        }


@dataclass
class StructuredResult:
    data: BaseModel
    usage: LLMUsage
    model: str
    attempts: int


@dataclass
class ChatResult:
    content: str | None
    tool_calls: list[dict] = field(default_factory=list)
    usage: LLMUsage = field(default_factory=LLMUsage)
    model: str = ""


def llm_configured() -> bool:
    return bool(settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL)


_clients: dict[tuple, openai.OpenAI] = {}
# Servers seen to refuse json_schema, so later calls go straight to json_object.
_no_json_schema: set[str] = set()
_lock = threading.Lock()


def _openai(base_url: str | None, api_key: str, timeout: float) -> openai.OpenAI:
    import openai  # lazy: see the module docstring

    key = (base_url, api_key, timeout)
    with _lock:
        if key not in _clients:
            # Retries are ours (counted, logged, and applied to bad output too), so the SDK's are off.
            _clients[key] = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        return _clients[key]


def reset_clients() -> None:
    with _lock:
        _clients.clear()
        _no_json_schema.clear()


def get_llm_client(model: str | None = None) -> LLMClient:
    """A client for `model` (default EVALSITE_JUDGE_MODEL) on the operator's server: OPENAI_BASE_URL
    and OPENAI_API_KEY, only ever together. Raises LLMNotConfigured when there is no server.
    A bot's own endpoint goes through bot_endpoint_llm_client instead, never through here."""
    base_url = settings.OPENAI_BASE_URL or None
    api_key = settings.OPENAI_API_KEY
    if not base_url and not api_key:
        raise LLMNotConfigured("no LLM configured: set OPENAI_API_KEY and/or OPENAI_BASE_URL")
    # Local servers (Ollama, vLLM) take any key, but the SDK insists on one.
    client = _openai(base_url, api_key or "not-needed", float(settings.EVALSITE_LLM_TIMEOUT_SECONDS))
    return LLMClient(client, model or settings.EVALSITE_JUDGE_MODEL, base_url or "https://api.openai.com/v1")


def bot_endpoint_llm_client(*, endpoint_url: str, secret: str, model: str | None) -> LLMClient:
    """A client for a bot's own OpenAI-compatible endpoint, with the bot's own secret.

    The address is user-supplied, so this never falls back to the platform's OPENAI_API_KEY (it
    would hand the operator's key to whoever chose the URL): without a secret there is no client.
    Requests go through the outbound guard, and errors describe the server's answer instead of
    quoting it."""
    import openai  # lazy: see the module docstring

    if not endpoint_url:
        raise LLMNotConfigured("the bot has no endpoint_url")
    if not secret:
        raise LLMNotConfigured(
            "a bot with its own endpoint_url needs its own secret (the platform's "
            "OPENAI_API_KEY is only sent to OPENAI_BASE_URL); for a server that takes "
            "no key, store any placeholder"
        )
    timeout = float(settings.EVALSITE_BOT_TIMEOUT_SECONDS)
    key = ("bot", endpoint_url, secret, timeout)
    with _lock:
        if key not in _clients:
            _clients[key] = openai.OpenAI(
                api_key=secret, base_url=endpoint_url, timeout=timeout, max_retries=0, http_client=outbound.client()
            )
        client = _clients[key]
    return LLMClient(client, model or settings.EVALSITE_JUDGE_MODEL, endpoint_url, untrusted_server=True)


def _outbound_refusal(exc: Exception):
    """The outbound guard's refusal behind an SDK error (the SDK wraps it as a connection error)."""
    cause = exc.__cause__
    if isinstance(cause, outbound.OutboundError) and not isinstance(cause, outbound.OutboundTimeout):
        return cause
    return None


def _retryable(exc: Exception) -> bool:
    import openai  # lazy: see the module docstring

    if _outbound_refusal(exc) is not None:
        return False  # the same address or answer would be refused again
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _describe(exc: Exception, *, quote_server: bool = True, timeout: float | httpx.Timeout | None = None) -> str:
    """The reason for a failed request. With quote_server off (a user-supplied server, which may be
    an internal service) nothing the server wrote is repeated: only status, content type and size."""
    import openai  # lazy: see the module docstring

    refusal = _outbound_refusal(exc)
    if refusal is not None:
        return refusal.reason
    if isinstance(exc, openai.APITimeoutError):
        return f"timed out after {timeout if timeout is not None else settings.EVALSITE_LLM_TIMEOUT_SECONDS} s"
    if isinstance(exc, openai.APIConnectionError):
        return "server unreachable"
    if isinstance(exc, openai.APIStatusError) and not quote_server:
        return outbound.describe_response(
            exc.status_code, exc.response.headers.get("content-type", ""), len(exc.response.content)
        )
    if not quote_server:
        return type(exc).__name__
    if isinstance(exc, openai.APIStatusError):
        message = exc.message if isinstance(exc.message, str) else str(exc.message)
        return f"HTTP {exc.status_code}: {message[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _backoff(attempt: int, exc: Exception | None) -> float:
    delay = float(settings.EVALSITE_LLM_BACKOFF_SECONDS) * (2 ** (attempt - 1))
    response = getattr(exc, "response", None)
    retry_after = response.headers.get("retry-after") if response is not None else None
    if retry_after:
        try:
            delay = max(delay, min(float(retry_after), 30.0))
        except ValueError:
            pass
    return delay


def extract_json(text: str | None) -> Any:
    """The first JSON object in a reply that may wrap it in code fences or prose."""
    if text is None:
        raise ValueError("empty reply")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        candidate = candidate.strip()
        for start in [i for i, ch in enumerate(candidate) if ch == "{"][:20]:
            try:
                value, _end = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError(f"no JSON object in reply: {text[:200]!r}")


@functools.cache
def _json_schema(response_model: type[BaseModel]) -> dict:
    """A response model's JSON Schema, built once per model: pydantic builds it anew on every call
    (0.2 ms for a verdict, 0.8 ms for a batched answer), and a run judge asks for it every request.
    Callers only read it."""
    return response_model.model_json_schema()


def _rejects_json_schema(exc: Exception) -> bool:
    import openai  # lazy: see the module docstring

    if not isinstance(exc, openai.BadRequestError):
        return False
    text = str(exc).lower()
    return "response_format" in text or "json_schema" in text


class LLMClient:
    def __init__(self, client: openai.OpenAI, model: str, base_url: str, *, untrusted_server: bool = False):
        self._client = client
        self.model = model
        self.base_url = base_url
        self._quote_server = not untrusted_server
        # The platform's own server is what keys are billed for (KeyUsageDay); a bot's endpoint is
        # its owner's. The meter current now is the fallback for calls made from threads that do
        # not carry the caller's context (a judge's thread pool).
        self._metered = not untrusted_server
        self._meter = usage.current_meter()

    def _spent(self, spent) -> None:
        """Count one answered request (and the tokens its `usage` reports) against the current key."""
        if not self._metered:
            return
        meter = usage.current_meter() or self._meter
        if meter is not None:
            meter.add(
                input_tokens=getattr(spent, "prompt_tokens", 0) or 0,
                output_tokens=getattr(spent, "completion_tokens", 0) or 0,
            )

    def _reason(self, exc: Exception) -> str:
        return _describe(exc, quote_server=self._quote_server, timeout=self._client.timeout)

    @property
    def judge_label(self) -> str:
        return f"openai:{self.model}"

    @property
    def takes_json_schema(self) -> bool:
        """Whether the server takes `response_format: json_schema` (structured output): true until
        it has been seen refusing it (in this process); from then on structured answers are asked
        for as json_object with the schema in the prompt, which models follow less reliably."""
        return self.base_url not in _no_json_schema

    def openai_client(self) -> openai.OpenAI:
        return self._client

    def _call(self, what: str, fn):
        """Run one request with the retry policy. Returns fn's result; raises LLMError."""
        import openai  # lazy: see the module docstring

        last: Exception | None = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return fn(), attempt
            except openai.OpenAIError as exc:
                last = exc
                if not _retryable(exc) or attempt == MAX_ATTEMPTS:
                    break
                logger.warning("LLM %s attempt %d failed (%s); retrying", what, attempt, self._reason(exc))
                time.sleep(_backoff(attempt, exc))
        assert last is not None  # the loop only ends here after a failed attempt
        raise LLMError(f"{what} failed after {attempt} attempt(s): {self._reason(last)}")

    def _create_completion(self, **body) -> ChatCompletion:
        from openai.types.chat import ChatCompletion  # lazy: see the module docstring

        # chat.completions.create() first walks its typed-dict annotations over the whole body to
        # transform it: about 2 ms of CPU per call (measured), a fifth of a run worker's CPU. Our
        # bodies are plain JSON already, so they are posted as they are, through the same client
        # (same timeout, errors and response parsing).
        return self._client.post("/chat/completions", body=body, cast_to=ChatCompletion)

    def complete_structured(
        self,
        *,
        system: str,
        user: str,
        response_model: type[BaseModel],
        name: str,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        retry_unusable_reply: bool = True,
    ) -> StructuredResult:
        """One structured answer. retry_unusable_reply=False: the first answer the model gives is the
        only one asked for (requests that fail in transport are still retried), so an unusable
        answer raises LLMError at once."""
        import openai  # lazy: see the module docstring

        schema = _json_schema(response_model)
        spent = LLMUsage()
        problems: list[str] = []
        attempt = 0
        while attempt < MAX_ATTEMPTS:
            attempt += 1
            messages, response_format = self._structured_request(system, user, schema, name)
            try:
                completion = self._create_completion(
                    model=self.model,
                    messages=messages,
                    response_format=response_format,
                    temperature=temperature,
                    **({"max_tokens": max_tokens} if max_tokens else {}),
                )
            except openai.OpenAIError as exc:
                if _rejects_json_schema(exc) and self.base_url not in _no_json_schema:
                    # Not the model's fault: ask again in the older format, without spending an attempt.
                    logger.info("LLM server %s refuses json_schema; using json_object", self.base_url)
                    _no_json_schema.add(self.base_url)
                    attempt -= 1
                    continue
                if not _retryable(exc):
                    raise LLMError(f"{name}: {self._reason(exc)}") from None
                problems.append(self._reason(exc))
                if attempt < MAX_ATTEMPTS:
                    logger.warning("LLM %s attempt %d failed (%s); retrying", name, attempt, problems[-1])
                    time.sleep(_backoff(attempt, exc))
                continue
            spent.add(completion.usage)
            self._spent(completion.usage)
            text = completion.choices[0].message.content if completion.choices else None
            try:
                data = response_model.model_validate(extract_json(text))
            except (ValueError, ValidationError) as exc:
                problems.append(f"unusable reply ({str(exc).splitlines()[0][:200]})")
                if not retry_unusable_reply:
                    raise LLMError(f"{name}: {problems[-1]}") from None
                continue
            return StructuredResult(data=data, usage=spent, model=completion.model or self.model, attempts=attempt)
        raise LLMError(f"{name}: no valid answer after {MAX_ATTEMPTS} attempts: {'; '.join(problems)}")

    def _structured_request(self, system: str, user: str, schema: dict, name: str) -> tuple[list[dict], dict]:
        if self.base_url in _no_json_schema:
            system = f"{system}\n\nReply with one JSON object only, matching this JSON Schema:\n{json.dumps(schema)}"
            response_format: dict[str, Any] = {"type": "json_object"}
        else:
            response_format = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        return [{"role": "system", "content": system}, {"role": "user", "content": user}], response_format

    def chat(
        self,
        *,
        messages: list[dict],
        tools: list[dict] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        **params,
    ) -> ChatResult:
        from openai.types.chat import ChatCompletion  # lazy: see the module docstring

        kwargs = {"model": self.model, "messages": messages, **params}
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        completion, _attempts = self._call("chat", lambda: self._create_completion(**kwargs))
        self._spent(getattr(completion, "usage", None))
        # The SDK hands back the raw text when the answer is not JSON, and an object without
        # choices when it is JSON of another shape.
        if not isinstance(completion, ChatCompletion) or not completion.choices:
            raise LLMError("chat: the server's answer is not a chat completion")
        spent = LLMUsage()
        spent.add(completion.usage)
        message = completion.choices[0].message
        calls = []
        for tool_call in message.tool_calls or []:
            # evalsite only offers function tools, so every call is a function call (a custom tool
            # call has no `function`); the cast tells the checker so and does nothing at run time.
            call = cast("ChatCompletionMessageFunctionToolCall", tool_call)
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"_unparsed": call.function.arguments}
            calls.append(
                {
                    "id": call.id,
                    "name": call.function.name,
                    "arguments": arguments if isinstance(arguments, dict) else {"value": arguments},
                }
            )
        return ChatResult(content=message.content, tool_calls=calls, usage=spent, model=completion.model or self.model)

    def embed(self, texts: list[str]) -> list[list[float]]:
        response, _attempts = self._call(
            "embeddings", lambda: self._client.embeddings.create(model=settings.EVALSITE_EMBEDDING_MODEL, input=texts)
        )
        self._spent(getattr(response, "usage", None))
        return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
