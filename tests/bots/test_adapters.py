import pytest

from apps.bots.adapters import BotDocument, BotError, get_adapter
from apps.bots.adapters.demo import choose_passage, seeded_draw
from apps.bots.adapters.retrieval import Passage
from tests.bots.factories import TOOLS, make_bot_spec, user_turn
from tests.fakes.bot_server import FakeBotServer


class TestDemoBot:
    def test_answers_from_the_best_passage_after_searching(self):
        turn = get_adapter("demo").respond(
            make_bot_spec(), user_turn("How many PTO days do I accrue per month?"), conversation_id="c"
        )
        assert turn.tool_calls[0].name == "search_kb"
        assert turn.tool_calls[0].arguments == {"query": "How many PTO days do I accrue per month?"}
        assert "1.5 days of paid time off per month" in turn.reply
        assert turn.reply.startswith("According to PTO Policy")
        assert turn.handoff is False

    def test_is_deterministic(self):
        a = get_adapter("demo").respond(
            make_bot_spec(), user_turn("meal reimbursement when travelling"), conversation_id="1"
        )
        b = get_adapter("demo").respond(
            make_bot_spec(), user_turn("meal reimbursement when travelling"), conversation_id="2"
        )
        assert a.reply == b.reply and "75 dollars" in a.reply
        assert a.tool_calls[0].result == b.tool_calls[0].result

    def test_says_so_when_the_documents_do_not_cover_it(self):
        turn = get_adapter("demo").respond(
            make_bot_spec(), user_turn("What is the wifi password?"), conversation_id="c"
        )
        assert "couldn't find" in turn.reply
        assert turn.tool_calls[0].result == [] or turn.tool_calls[0].result[0]["score"] < 1.0

    def test_hands_off_when_asked_for_a_human(self):
        turn = get_adapter("demo").respond(
            make_bot_spec(), user_turn("Can I speak to a real person please?"), conversation_id="c"
        )
        assert turn.handoff is True and turn.tool_calls[0].name == "live_handoff"

    def test_without_a_handoff_tool_it_keeps_answering(self):
        turn = get_adapter("demo").respond(
            make_bot_spec(tools=TOOLS[:1]), user_turn("I want a human"), conversation_id="c"
        )
        assert turn.handoff is False and turn.tool_calls[0].name == "search_kb"


class TestDemoBotSettings:
    """The llm_parameters the demo adapter honours (apps.bots.adapters.demo): what lets two
    configurations of the demo bot answer differently, reproducibly."""

    def test_min_score_turns_a_weak_match_into_nothing_found(self):
        question = user_turn("When do reports get submitted?")
        weak = get_adapter("demo").respond(make_bot_spec(), question, conversation_id="c")
        assert weak.reply.startswith("According to Expense Policy") and weak.tool_calls[0].result[0]["score"] < 2
        strict = get_adapter("demo").respond(
            make_bot_spec(llm_parameters={"min_score": 2}), question, conversation_id="c"
        )
        assert "couldn't find" in strict.reply and strict.handoff is False
        assert [c.name for c in strict.tool_calls] == ["search_kb"]

    def test_handoff_when_nothing_found_hands_off_after_the_search(self):
        spec = make_bot_spec(llm_parameters={"min_score": 2, "handoff_when_nothing_found": True})
        turn = get_adapter("demo").respond(spec, user_turn("When do reports get submitted?"), conversation_id="c")
        assert turn.handoff is True and [c.name for c in turn.tool_calls] == ["search_kb", "live_handoff"]
        assert "couldn't find" in turn.reply and "live agent" in turn.reply
        found = get_adapter("demo").respond(
            spec, user_turn("How many PTO days do I accrue per month?"), conversation_id="c"
        )
        assert found.handoff is False and "1.5 days" in found.reply

    def test_max_sentences_keeps_the_sentences_that_answer_in_their_order(self):
        documents = (
            BotDocument(
                "HR",
                "Travel",
                "Book trips in the portal. Economy class is standard. Hotels are paid up to 250 dollars per night.",
            ),
        )
        question = user_turn("What is the hotel limit per night in the travel portal?")
        full = get_adapter("demo").respond(make_bot_spec(documents=documents), question, conversation_id="c")
        assert full.reply.count(".") == 3
        short = get_adapter("demo").respond(
            make_bot_spec(documents=documents, llm_parameters={"max_sentences": 2}), question, conversation_id="c"
        )
        assert short.reply == (
            "According to Travel: Book trips in the portal. Hotels are paid up to 250 dollars per night."
        )

    def test_the_draw_is_seeded_by_item_attempt_and_turn_never_by_run(self):
        # The engine names conversations <run id>:<test case id>[:<attempt>].
        assert seeded_draw("run-a:case-1", 1) == seeded_draw("run-b:case-1", 1)
        assert seeded_draw("run-a:case-1:2", 1) == seeded_draw("run-b:case-1:2", 1)
        draws = {seeded_draw("run-a:case-1", 1), seeded_draw("run-a:case-1:2", 1), seeded_draw("run-a:case-1", 2)}
        assert len(draws) == 3 and all(0 <= d < 1 for d in draws)

    def test_temperature_draws_among_the_passages_weighted_by_score(self):
        doc = BotDocument("HR", "Doc", "text")
        best, close, far = Passage(doc, "best", 6.0), Passage(doc, "close", 5.0), Passage(doc, "far", 1.0)
        candidates = [best, close, far]
        assert {choose_passage(candidates, temperature=0, draw=d).text for d in (0.0, 0.5, 0.99)} == {"best"}
        # At temperature 1 the weights are 1, e^-1 and e^-5: the best up to 73% of the draws, then the close one.
        assert choose_passage(candidates, temperature=1, draw=0.70).text == "best"
        assert choose_passage(candidates, temperature=1, draw=0.80).text == "close"
        assert choose_passage(candidates, temperature=1, draw=0.999).text == "far"

    def test_temperature_makes_attempts_disagree_reproducibly(self):
        spec = make_bot_spec(llm_parameters={"temperature": 1})
        question = user_turn("How many days of PTO carry over, and when are expense reports due?")
        replies = [
            get_adapter("demo").respond(spec, question, conversation_id=f"run:case:{attempt}").reply
            for attempt in range(1, 9)
        ]
        again = [
            get_adapter("demo").respond(spec, question, conversation_id=f"other-run:case:{attempt}").reply
            for attempt in range(1, 9)
        ]
        assert replies == again and len(set(replies)) > 1


class TestHttpBot:
    def test_posts_the_conversation_with_the_secret_and_reads_the_reply(self):
        with FakeBotServer() as bot:
            conversation = [
                {"role": "user", "content": "PTO?"},
                {"role": "assistant", "content": "Sure"},
                {"role": "user", "content": "How many days?"},
            ]
            turn = get_adapter("http").respond(
                make_bot_spec(adapter="http", endpoint_url=bot.url, secret="s3cret"),
                conversation,
                conversation_id="conv-1",
            )
        assert bot.requests == [{"agent_id": "a" * 24, "conversation_id": "conv-1", "messages": conversation}]
        assert bot.auth_headers == ["Bearer s3cret"]
        assert turn.reply == "Here is what I found about: How many days?"
        assert turn.tool_calls[0].name == "search_kb" and turn.external_trace_id == "run-123"
        assert turn.latency_ms > 0

    def test_no_secret_sends_no_authorization(self):
        with FakeBotServer() as bot:
            get_adapter("http").respond(
                make_bot_spec(adapter="http", endpoint_url=bot.url), user_turn("hi"), conversation_id="c"
            )
        assert bot.auth_headers == [None]

    @pytest.mark.parametrize(
        "behaviour, reason",
        [
            (lambda r: (500, {"error": "boom"}), "HTTP 500"),
            (lambda r: (200, "<html>not json</html>"), "not JSON"),
            (lambda r: (200, {"answer": "wrong field"}), "no string 'reply'"),
            (lambda r: (200, {"reply": "x", "tool_calls": "nope"}), "not a list"),
            (lambda r: (200, {"reply": "x", "tool_calls": [{"arguments": {}}]}), "without a string 'name'"),
        ],
    )
    def test_unusable_answers_are_bot_errors(self, behaviour, reason):
        with FakeBotServer(behaviour) as bot:
            with pytest.raises(BotError, match=reason) as err:
                get_adapter("http").respond(
                    make_bot_spec(adapter="http", endpoint_url=bot.url, secret="s3cret"),
                    user_turn("hi"),
                    conversation_id="c",
                )
        assert "s3cret" not in err.value.reason

    def test_timeout_is_a_bot_error(self, settings):
        settings.EVALSITE_BOT_TIMEOUT_SECONDS = 0.3
        with FakeBotServer(delay=1.0) as bot:
            with pytest.raises(BotError, match="did not answer within"):
                get_adapter("http").respond(
                    make_bot_spec(adapter="http", endpoint_url=bot.url), user_turn("hi"), conversation_id="c"
                )

    def test_unreachable_bot_is_a_bot_error(self):
        with pytest.raises(BotError, match="unreachable"):
            get_adapter("http").respond(
                make_bot_spec(adapter="http", endpoint_url="http://127.0.0.1:9/"), user_turn("hi"), conversation_id="c"
            )


def test_unknown_adapter_is_named():
    with pytest.raises(BotError, match="unknown bot adapter 'carrier-pigeon'"):
        get_adapter("carrier-pigeon")
