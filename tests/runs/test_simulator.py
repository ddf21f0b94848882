from apps.bots.adapters import get_adapter
from apps.runs.simulator import ScriptedUser, run_scenario, run_single_turn
from tests.bots.factories import make_bot_spec


def test_single_turn_records_reply_and_tool_calls():
    conv = run_single_turn(
        adapter=get_adapter("demo"), spec=make_bot_spec(), message="How much PTO carries over?", conversation_id="c"
    )
    assert [m["role"] for m in conv.messages] == ["user", "assistant"]
    assert "carries over" in conv.messages[1]["content"]
    assert conv.tool_calls[0]["name"] == "search_kb" and conv.tool_calls[0]["turn"] == 1
    assert conv.stopped_because == "single_turn"


def test_scripted_scenario_plays_every_turn_then_stops():
    user = ScriptedUser(["And what about meals when travelling?", "Thanks!"])
    conv = run_scenario(
        adapter=get_adapter("demo"),
        spec=make_bot_spec(),
        persona="new employee",
        initial_message="How many PTO days do I get?",
        max_turns=8,
        user=user,
        conversation_id="c",
    )
    assert [m["role"] for m in conv.messages] == ["user", "assistant"] * 3
    assert "75 dollars" in conv.messages[3]["content"]
    assert conv.stopped_because == "script_exhausted" and len(conv.turns) == 3


def test_scenario_stops_at_max_turns():
    user = ScriptedUser(["more?", "more?", "more?", "more?"])
    conv = run_scenario(
        adapter=get_adapter("demo"),
        spec=make_bot_spec(),
        persona="p",
        initial_message="PTO?",
        max_turns=2,
        user=user,
        conversation_id="c",
    )
    assert len(conv.turns) == 2 and conv.stopped_because == "max_turns"


def test_scenario_stops_early_on_handoff():
    user = ScriptedUser(["This is useless, let me talk to a human", "hello?", "anyone?"])
    conv = run_scenario(
        adapter=get_adapter("demo"),
        spec=make_bot_spec(),
        persona="angry",
        initial_message="PTO?",
        max_turns=8,
        user=user,
        conversation_id="c",
    )
    assert conv.stopped_because == "handoff" and len(conv.turns) == 2
    assert conv.tool_calls[-1]["name"] == "live_handoff"


def test_without_a_script_a_scenario_is_one_turn():
    conv = run_scenario(
        adapter=get_adapter("demo"),
        spec=make_bot_spec(),
        persona="p",
        initial_message="PTO?",
        max_turns=5,
        user=ScriptedUser(None),
        conversation_id="c",
    )
    assert len(conv.turns) == 1 and conv.stopped_because == "script_exhausted"
