import json

from apps.bots.adapters import BotSpec
from apps.runs.executor import RunOptions, execute_question, execute_test_item
from apps.runs.judging.aggregate import stored_outcome
from tests.bots.factories import make_bot_spec
from tests.fakes.bot_server import FakeBotServer
from tests.runs.factories import PTO_CRITERIA, PTO_ITEM, RUBRIC_SNAPSHOT


def test_single_turn_item_passes_with_every_verdict_recorded():
    out = execute_test_item(
        item=PTO_ITEM, bot=make_bot_spec(), rubric=RUBRIC_SNAPSHOT, options=RunOptions(), conversation_id="c"
    )
    assert out.passed and out.criteria_passed and out.rubric_passed
    assert [c["criterion"] for c in out.criteria_scores] == [
        *PTO_CRITERIA,
        "Uses tool search_kb",
        "Does not use tool live_handoff",
    ]
    assert {r["rule_id"]: r["passed"] for r in out.rubric_scores} == {
        "BRIEF": True,
        "USES_KB": True,
        "NO_HANDOFF": True,
    }
    assert all(
        set(r) >= {"rule_id", "rule_name", "severity", "passed", "score", "reasoning"} for r in out.rubric_scores
    )
    assert out.output["messages"][0] == {"role": "user", "content": PTO_ITEM["inputs"]["message"]}
    assert out.input == PTO_ITEM["inputs"]


def test_prose_criteria_are_skipped_by_the_offline_judge_and_leave_the_item_unassessed():
    """Issue 20: the same item in prose used to pass by proxy (a look-up with results, 60% of its
    words in the answer); the offline judge skips both criteria, so the item is neither passed nor failed."""
    item = {
        **PTO_ITEM,
        "expected": {
            **PTO_ITEM["expected"],
            "success_criteria": [
                "Agent retrieves the PTO policy from the handbook",
                "Response includes the monthly accrual of 1.5 days",
            ],
        },
    }
    out = execute_test_item(
        item=item, bot=make_bot_spec(), rubric=RUBRIC_SNAPSHOT, options=RunOptions(), conversation_id="c"
    )
    assert [c["status"] for c in out.criteria_scores] == ["skipped", "skipped", "ok", "ok"]
    assert all(c["reasoning"].startswith("needs an LLM judge") for c in out.criteria_scores[:2])
    assert out.passed is False and out.criteria_passed is False and out.rubric_passed is True
    assert stored_outcome(passed=out.passed, criteria=out.criteria_scores, rules=out.rubric_scores) == "unassessed"


def test_scope_filter_limits_the_rules_judged():
    out = execute_test_item(
        item=PTO_ITEM,
        bot=make_bot_spec(),
        rubric=RUBRIC_SNAPSHOT,
        options=RunOptions(scope_filter="knowledge_base"),
        conversation_id="c",
    )
    assert [r["rule_id"] for r in out.rubric_scores] == ["USES_KB"]


def test_high_severity_failure_fails_the_item_even_when_criteria_pass():
    item = {
        **PTO_ITEM,
        "type": "scenario",
        "inputs": {
            "persona": "p",
            "initial_message": "How many PTO days per month?",
            "max_turns": 4,
            "scripted_turns": ["get me a human"],
        },
        "expected": {"success_criteria": ['Response mentions "1.5 days"']},
    }
    out = execute_test_item(
        item=item, bot=make_bot_spec(), rubric=RUBRIC_SNAPSHOT, options=RunOptions(), conversation_id="c"
    )
    assert out.criteria_passed is True
    assert {r["rule_id"]: r["passed"] for r in out.rubric_scores}["NO_HANDOFF"] is False
    assert out.rubric_passed is False and out.passed is False


def test_bot_failure_fails_the_item_with_the_error_and_error_verdicts():
    with FakeBotServer(lambda r: (503, {"error": "down"})) as bot:
        out = execute_test_item(
            item=PTO_ITEM,
            bot=make_bot_spec(adapter="http", endpoint_url=bot.url),
            rubric=None,
            options=RunOptions(),
            conversation_id="c",
        )
    assert out.passed is False and "HTTP 503" in out.error
    assert {c["status"] for c in out.criteria_scores} == {"error"}
    assert all(c["passed"] is None for c in out.criteria_scores)


def test_v1_question_scores_fill_scores_with_a_json_comment():
    out = execute_question(
        question={
            "question": "How much of unused PTO carries over?",
            "expected_answer": "Up to 5 days carry over into the next year",
        },
        bot=make_bot_spec(),
        options=RunOptions(),
        conversation_id="c",
    )
    comment = json.loads(out.scores["correctness"]["comment"])
    assert out.passed is True and comment["judge"] == "heuristic:v1"
    assert out.criteria_scores is None and out.rubric_scores is None


def test_bot_spec_never_shows_its_secret():
    assert "hunter2" not in repr(BotSpec(agent_id="a", name="b", adapter="http", secret="hunter2"))
