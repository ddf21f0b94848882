import pytest

from apps.bots.adapters import BotError, get_adapter
from tests.bots.factories import TOOLS, make_bot_spec, user_turn
from tests.fakes.bot_server import FakeBotServer


class TestDemoBot:
    def test_answers_from_the_best_passage_after_searching(self):
        turn = get_adapter("demo").respond(make_bot_spec(), user_turn("How many PTO days do I accrue per month?"), conversation_id="c")
        assert turn.tool_calls[0].name == "search_kb"
        assert turn.tool_calls[0].arguments == {"query": "How many PTO days do I accrue per month?"}
        assert "1.5 days of paid time off per month" in turn.reply
        assert turn.reply.startswith("According to PTO Policy")
        assert turn.handoff is False

    def test_is_deterministic(self):
        a = get_adapter("demo").respond(make_bot_spec(), user_turn("meal reimbursement when travelling"), conversation_id="1")
        b = get_adapter("demo").respond(make_bot_spec(), user_turn("meal reimbursement when travelling"), conversation_id="2")
        assert a.reply == b.reply and "75 dollars" in a.reply
        assert a.tool_calls[0].result == b.tool_calls[0].result

    def test_says_so_when_the_documents_do_not_cover_it(self):
        turn = get_adapter("demo").respond(make_bot_spec(), user_turn("What is the wifi password?"), conversation_id="c")
        assert "couldn't find" in turn.reply
        assert turn.tool_calls[0].result == [] or turn.tool_calls[0].result[0]["score"] < 1.0

    def test_hands_off_when_asked_for_a_human(self):
        turn = get_adapter("demo").respond(make_bot_spec(), user_turn("Can I speak to a real person please?"), conversation_id="c")
        assert turn.handoff is True and turn.tool_calls[0].name == "live_handoff"

    def test_without_a_handoff_tool_it_keeps_answering(self):
        turn = get_adapter("demo").respond(make_bot_spec(tools=TOOLS[:1]), user_turn("I want a human"), conversation_id="c")
        assert turn.handoff is False and turn.tool_calls[0].name == "search_kb"


class TestHttpBot:
    def test_posts_the_conversation_with_the_secret_and_reads_the_reply(self):
        with FakeBotServer() as bot:
            conversation = [{"role": "user", "content": "PTO?"}, {"role": "assistant", "content": "Sure"},
                            {"role": "user", "content": "How many days?"}]
            turn = get_adapter("http").respond(make_bot_spec(adapter="http", endpoint_url=bot.url, secret="s3cret"),
                                               conversation, conversation_id="conv-1")
        assert bot.requests == [{"agent_id": "a" * 24, "conversation_id": "conv-1", "messages": conversation}]
        assert bot.auth_headers == ["Bearer s3cret"]
        assert turn.reply == "Here is what I found about: How many days?"
        assert turn.tool_calls[0].name == "search_kb" and turn.external_trace_id == "run-123"
        assert turn.latency_ms > 0

    def test_no_secret_sends_no_authorization(self):
        with FakeBotServer() as bot:
            get_adapter("http").respond(make_bot_spec(adapter="http", endpoint_url=bot.url), user_turn("hi"), conversation_id="c")
        assert bot.auth_headers == [None]

    @pytest.mark.parametrize("behaviour, reason", [
        (lambda r: (500, {"error": "boom"}), "HTTP 500"),
        (lambda r: (200, "<html>not json</html>"), "not JSON"),
        (lambda r: (200, {"answer": "wrong field"}), "no string 'reply'"),
        (lambda r: (200, {"reply": "x", "tool_calls": "nope"}), "not a list"),
        (lambda r: (200, {"reply": "x", "tool_calls": [{"arguments": {}}]}), "without a string 'name'"),
    ])
    def test_unusable_answers_are_bot_errors(self, behaviour, reason):
        with FakeBotServer(behaviour) as bot:
            with pytest.raises(BotError, match=reason) as err:
                get_adapter("http").respond(make_bot_spec(adapter="http", endpoint_url=bot.url, secret="s3cret"), user_turn("hi"),
                                            conversation_id="c")
        assert "s3cret" not in err.value.reason

    def test_timeout_is_a_bot_error(self, settings):
        settings.EVALSITE_BOT_TIMEOUT_SECONDS = 0.3
        with FakeBotServer(delay=1.0) as bot:
            with pytest.raises(BotError, match="did not answer within"):
                get_adapter("http").respond(make_bot_spec(adapter="http", endpoint_url=bot.url), user_turn("hi"), conversation_id="c")

    def test_unreachable_bot_is_a_bot_error(self):
        with pytest.raises(BotError, match="unreachable"):
            get_adapter("http").respond(make_bot_spec(adapter="http", endpoint_url="http://127.0.0.1:9/"), user_turn("hi"),
                                        conversation_id="c")


def test_unknown_adapter_is_named():
    with pytest.raises(BotError, match="unknown bot adapter 'carrier-pigeon'"):
        get_adapter("carrier-pigeon")
