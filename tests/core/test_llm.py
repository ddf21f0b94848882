import time

import pytest
from pydantic import BaseModel, Field

from apps.core.llm import client as llm
from apps.core.llm.client import (
    LLMError,
    LLMNotConfigured,
    bot_endpoint_llm_client,
    extract_json,
    get_llm_client,
    llm_configured,
)


class Verdict(BaseModel):
    score: float = Field(ge=0, le=1)
    reasoning: str


def ask(**kw):
    return get_llm_client().complete_structured(
        system="Judge. Reply in JSON.", user="<data>x</data>", response_model=Verdict, name="verdict", **kw
    )


def test_not_configured(settings):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    assert llm_configured() is False
    with pytest.raises(LLMNotConfigured):
        get_llm_client()


def test_valid_json_with_schema_request_and_usage(openai_server):
    openai_server.push_json({"score": 0.8, "reasoning": "ok"})
    result = ask()
    assert result.data == Verdict(score=0.8, reasoning="ok")
    assert result.attempts == 1 and result.model == "judge-model"
    assert result.usage.as_dict() == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    request = openai_server.requests[0]
    assert request["model"] == "judge-model" and request["temperature"] == 0.0
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"]["properties"]["score"]["maximum"] == 1
    assert openai_server.headers[0]["Authorization"] == "Bearer test-key"
    assert get_llm_client().judge_label == "openai:judge-model"


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"score": 0.5, "reasoning": "fenced"}\n```',
        'Here is my verdict: {"score": 0.5, "reasoning": "stray text"} Hope it helps!',
        '```\n{"score": 0.5, "reasoning": "bare fence"}\n```',
    ],
)
def test_tolerant_parsing(openai_server, reply):
    openai_server.push_text(reply)
    assert ask().data.score == 0.5


def test_garbage_every_time_is_an_error_not_a_number(openai_server):
    for _ in range(3):
        openai_server.push_text("I think it was pretty good overall.")
    with pytest.raises(LLMError, match="no valid answer after 3 attempts") as err:
        ask()
    assert "no JSON object" in err.value.reason
    assert len(openai_server.requests) == 3


def test_without_reasking_an_unusable_reply_is_an_error_after_one_request(openai_server):
    openai_server.push_json({"score": 7, "reasoning": "out of range"})
    openai_server.push_json({"score": 0.7, "reasoning": "would have been accepted"})
    with pytest.raises(LLMError, match="unusable reply"):
        ask(retry_unusable_reply=False)
    assert len(openai_server.requests) == 1


def test_without_reasking_transport_failures_are_still_retried(openai_server):
    openai_server.push_error(503, "busy")
    openai_server.push_json({"score": 0.7, "reasoning": "after a transport retry"})
    result = ask(retry_unusable_reply=False)
    assert result.data.score == 0.7 and result.attempts == 2
    assert len(openai_server.requests) == 2


def test_out_of_schema_json_is_retried_then_accepted(openai_server):
    openai_server.push_json({"score": 7, "reasoning": "out of range"})
    openai_server.push_json({"score": 0.7, "reasoning": "fixed"})
    result = ask()
    assert result.data.score == 0.7 and result.attempts == 2
    assert result.usage.total_tokens == 36  # both calls cost tokens


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retried_statuses_then_success(openai_server, status):
    openai_server.push_error(status, "busy")
    openai_server.push_json({"score": 1.0, "reasoning": "after retry"})
    assert ask().attempts == 2


def test_retry_after_header_is_honoured(openai_server, settings):
    openai_server.push_error(429, "slow down", headers={"Retry-After": "0.3"})
    openai_server.push_json({"score": 1.0, "reasoning": "x"})
    started = time.monotonic()
    ask()
    assert time.monotonic() - started >= 0.3


def test_client_errors_are_not_retried(openai_server):
    openai_server.push_error(401, "bad key")
    with pytest.raises(LLMError, match="HTTP 401"):
        ask()
    assert len(openai_server.requests) == 1


def test_timeout_is_retried_then_reported(openai_server, settings):
    settings.EVALSITE_LLM_TIMEOUT_SECONDS = 0.3
    llm.reset_clients()
    for _ in range(3):
        openai_server.push_delay(1.0, {"score": 1.0, "reasoning": "too late"})
    with pytest.raises(LLMError, match="timed out after 0.3 s"):
        ask()


def test_timeout_then_success(openai_server, settings):
    settings.EVALSITE_LLM_TIMEOUT_SECONDS = 0.3
    llm.reset_clients()
    openai_server.push_delay(1.0, {"score": 1.0, "reasoning": "late"})
    openai_server.push_json({"score": 0.9, "reasoning": "on time"})
    assert ask().data.reasoning == "on time"


def test_json_schema_refused_falls_back_to_json_object_and_remembers(openai_server):
    openai_server.reject_json_schema = True
    openai_server.push_json({"score": 0.4, "reasoning": "object mode"})
    openai_server.push_json({"score": 0.3, "reasoning": "still object mode"})
    first = ask()
    assert first.data.score == 0.4 and first.attempts == 1
    ask()
    formats = [r["response_format"]["type"] for r in openai_server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert "JSON Schema" in openai_server.requests[1]["messages"][0]["content"]


def test_unreachable_server(settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_API_KEY = ""
    settings.EVALSITE_LLM_BACKOFF_SECONDS = 0.01
    llm.reset_clients()
    with pytest.raises(LLMError, match="unreachable"):
        ask()
    llm.reset_clients()


def test_chat_returns_tool_calls_and_usage(openai_server):
    openai_server.push_tool_calls([{"name": "search_kb", "arguments": {"query": "pto"}}], content=None)
    result = get_llm_client().chat(
        messages=[{"role": "user", "content": "PTO?"}],
        tools=[{"type": "function", "function": {"name": "search_kb", "parameters": {}}}],
    )
    assert result.tool_calls == [{"id": "call_0", "name": "search_kb", "arguments": {"query": "pto"}}]
    assert result.usage.total_tokens == 18
    assert openai_server.requests[0]["tools"][0]["function"]["name"] == "search_kb"


def test_bot_endpoint_uses_the_bots_secret(openai_server, settings):
    client = bot_endpoint_llm_client(endpoint_url=openai_server.url, secret="bot-secret", model="bot-model")
    openai_server.push_text("hello")
    assert client.chat(messages=[{"role": "user", "content": "hi"}]).content == "hello"
    assert openai_server.requests[0]["model"] == "bot-model"
    assert openai_server.headers[0]["Authorization"] == "Bearer bot-secret"


def test_bot_endpoint_without_a_secret_never_falls_back_to_the_platform_key(openai_server, settings):
    # The platform key (test-key) is configured; a bot-supplied URL must still not get it.
    with pytest.raises(LLMNotConfigured, match="needs its own secret"):
        bot_endpoint_llm_client(endpoint_url=openai_server.url, secret="", model=None)
    assert openai_server.requests == []


def test_the_platform_client_takes_no_address_or_key_from_its_caller():
    # Pairing a caller's URL with the platform key is impossible by construction.
    with pytest.raises(TypeError):
        get_llm_client(base_url="http://attacker.example/v1")  # type: ignore[call-arg]


def test_bot_endpoint_errors_describe_the_answer_without_quoting_it(openai_server):
    client = bot_endpoint_llm_client(endpoint_url=openai_server.url, secret="bot-secret", model="m")
    openai_server.push_error(404, "internal admin console: password hunter2")
    with pytest.raises(LLMError) as err:
        client.chat(messages=[{"role": "user", "content": "hi"}])
    assert "HTTP 404 (application/json" in err.value.reason and "hunter2" not in err.value.reason


def test_bot_endpoint_goes_through_the_outbound_guard(openai_server, settings):
    settings.EVALSITE_OUTBOUND_ALLOW = []
    client = bot_endpoint_llm_client(endpoint_url=openai_server.url, secret="bot-secret", model="m")
    with pytest.raises(LLMError, match="127.0.0.1 is not allowed") as err:
        client.chat(messages=[{"role": "user", "content": "hi"}])
    assert "after 1 attempt" in err.value.reason  # a refusal is not retried
    assert openai_server.requests == []


def test_bot_endpoint_answer_that_is_not_a_completion(openai_server):
    client = bot_endpoint_llm_client(endpoint_url=openai_server.url, secret="bot-secret", model="m")
    openai_server.push(lambda body: (200, {"unexpected": "shape"}, None))
    with pytest.raises(LLMError, match="not a chat completion"):
        client.chat(messages=[{"role": "user", "content": "hi"}])


def test_embeddings(openai_server, settings):
    vectors = get_llm_client().embed(["a", "b"])
    assert len(vectors) == 2 and len(vectors[0]) == 8 and vectors[0] != vectors[1]
    assert openai_server.requests[0]["model"] == settings.EVALSITE_EMBEDDING_MODEL


def test_extract_json_rejects_arrays_and_empty():
    with pytest.raises(ValueError):
        extract_json("[1, 2]")
    with pytest.raises(ValueError):
        extract_json(None)


def test_only_this_module_imports_openai():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2] / "apps"
    importers = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"^\s*(import openai|from openai)", p.read_text(), re.M)
    )
    assert importers == ["core/llm/client.py"]
