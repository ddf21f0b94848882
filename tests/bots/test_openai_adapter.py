import pytest

from apps.bots.adapters import BotError, get_adapter
from tests.bots.factories import make_bot_spec, user_turn


def openai_spec(**extra):
    return make_bot_spec(
        adapter="openai",
        system_prompt="You are the HR assistant.",
        llm_model="bot-model",
        llm_parameters={"temperature": 0.3},
        **extra,
    )


def test_plain_answer_uses_system_prompt_and_parameters(openai_server):
    openai_server.push_text("Hello! How can I help?")
    turn = get_adapter("openai").respond(openai_spec(), user_turn("hi"), conversation_id="c")
    assert turn.reply == "Hello! How can I help?" and turn.tool_calls == []
    request = openai_server.chat_requests[0]
    assert request["model"] == "bot-model" and request["temperature"] == 0.3
    assert request["messages"][0] == {"role": "system", "content": "You are the HR assistant."}
    assert {t["function"]["name"] for t in request["tools"]} == {"search_kb", "live_handoff"}
    assert turn.usage["total_tokens"] == 18


def test_search_tool_is_executed_over_the_knowledge_base(openai_server):
    openai_server.push_tool_calls([{"name": "search_kb", "arguments": {"query": "PTO accrual per month"}}])
    openai_server.push_text("You accrue 1.5 days of PTO per month.")
    turn = get_adapter("openai").respond(openai_spec(), user_turn("How much PTO?"), conversation_id="c")
    assert turn.reply == "You accrue 1.5 days of PTO per month."
    call = turn.tool_calls[0]
    assert call.name == "search_kb" and call.success and "1.5 days" in call.result[0]["text"]
    followup = openai_server.chat_requests[1]["messages"]
    assert followup[-2]["tool_calls"][0]["function"]["name"] == "search_kb"
    assert followup[-1]["role"] == "tool" and "1.5 days" in followup[-1]["content"]
    assert turn.usage["total_tokens"] == 36


def test_handoff_tool_ends_the_turn_as_a_handoff(openai_server):
    openai_server.push_tool_calls([{"name": "live_handoff", "arguments": {"reason": "user asked"}}], content=None)
    turn = get_adapter("openai").respond(openai_spec(), user_turn("human please"), conversation_id="c")
    assert turn.handoff is True and turn.tool_calls[0].name == "live_handoff"


def test_unknown_and_custom_tools_are_recorded_not_faked(openai_server):
    openai_server.push_tool_calls([{"name": "delete_database", "arguments": {}}])
    openai_server.push_text("Sorry, I can't do that.")
    turn = get_adapter("openai").respond(openai_spec(), user_turn("drop it"), conversation_id="c")
    assert turn.tool_calls[0].success is False and "no tool named" in turn.tool_calls[0].error


def test_endless_tool_calls_are_a_bot_error(openai_server):
    for _ in range(4):
        openai_server.push_tool_calls([{"name": "search_kb", "arguments": {"query": "x"}}])
    with pytest.raises(BotError, match="kept calling tools"):
        get_adapter("openai").respond(openai_spec(), user_turn("loop"), conversation_id="c")


def test_llm_failure_is_a_bot_error(openai_server):
    for _ in range(3):
        openai_server.push_error(500, "down")
    with pytest.raises(BotError, match="openai bot failed: chat failed after 3 attempt"):
        get_adapter("openai").respond(openai_spec(), user_turn("hi"), conversation_id="c")


def test_bot_endpoint_and_secret_are_used(openai_server, settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    openai_server.push_text("ok")
    get_adapter("openai").respond(
        openai_spec(endpoint_url=openai_server.url, secret="bot-key"), user_turn("hi"), conversation_id="c"
    )
    assert openai_server.headers[0]["Authorization"] == "Bearer bot-key"


def test_bot_endpoint_without_a_secret_is_a_bot_error_and_gets_nothing(openai_server):
    # The platform key is configured (openai_server sets OPENAI_API_KEY=test-key), yet a bot
    # endpoint without its own secret is not called at all.
    with pytest.raises(BotError, match="needs its own secret"):
        get_adapter("openai").respond(openai_spec(endpoint_url=openai_server.url), user_turn("hi"), conversation_id="c")
    assert openai_server.requests == []


def test_without_an_endpoint_the_platform_server_and_key_are_used(openai_server):
    # The bot's secret is for the bot's own endpoint; the platform server gets the platform key.
    openai_server.push_text("ok")
    get_adapter("openai").respond(openai_spec(secret="bot-key"), user_turn("hi"), conversation_id="c")
    assert openai_server.headers[0]["Authorization"] == "Bearer test-key"


def test_not_configured_is_a_bot_error(settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    with pytest.raises(BotError, match="not configured"):
        get_adapter("openai").respond(openai_spec(), user_turn("hi"), conversation_id="c")


def test_a_turn_reports_its_calls_cached_tokens_and_the_model_that_answered(openai_server):
    """What the run prices the bot's turn from (apps.runs.costs): the server's model, not only the configured one."""
    from tests.fakes.openai_server import completion_body

    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "total_tokens": 120,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    openai_server.push_tool_calls([{"name": "search_kb", "arguments": {"query": "PTO"}}])
    openai_server.push(lambda body: (200, completion_body("gpt-4o-2024-08-06", "Done.", usage=usage), None))
    turn = get_adapter("openai").respond(openai_spec(), user_turn("How much PTO?"), conversation_id="c")
    assert turn.usage["calls"] == 2 and turn.usage["model"] == "gpt-4o-2024-08-06"
    assert (turn.usage["prompt_tokens"], turn.usage["cached_tokens"]) == (111, 64)
