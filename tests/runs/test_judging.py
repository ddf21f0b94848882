import pytest

from apps.bots.adapters import get_adapter
from apps.runs.judging import heuristic
from apps.runs.judging.aggregate import component_scores, coverage, item_outcome, rule_in_scope
from apps.runs.judging.types import CRITERION, RULE, Transcript, Verdict, verdicts_to_json
from apps.runs.simulator import ScriptedUser, run_scenario, run_single_turn
from tests.bots.factories import TOOLS, make_bot_spec


def outcome(criteria: list[dict], rules: list[dict] | None):
    """item_outcome over verdicts as they are stored."""
    return item_outcome(
        Verdict.list_from_json(criteria, kind=CRITERION),
        None if rules is None else Verdict.list_from_json(rules, kind=RULE),
    )


def stored_component_scores(rules: list[dict]) -> dict:
    return component_scores(Verdict.list_from_json(rules, kind=RULE))


BOT_TOOLS = [{"tool_name": t.tool_name, "name": t.name, "type": t.type} for t in TOOLS]


def transcript_of(conversation) -> Transcript:
    return Transcript(
        messages=conversation.messages,
        tool_calls=conversation.tool_calls,
        handed_off=conversation.stopped_because == "handoff",
        bot_tools=BOT_TOOLS,
    )


@pytest.fixture
def pto_answer():
    conv = run_single_turn(
        adapter=get_adapter("demo"), spec=make_bot_spec(), message="How many PTO days do I accrue?", conversation_id="c"
    )
    return transcript_of(conv)


@pytest.fixture
def handoff():
    conv = run_scenario(
        adapter=get_adapter("demo"),
        spec=make_bot_spec(),
        persona="p",
        initial_message="PTO?",
        max_turns=5,
        user=ScriptedUser(["I want a human"]),
        conversation_id="c",
    )
    return transcript_of(conv)


class TestCriteria:
    def test_a_prose_content_criterion_is_skipped_not_passed_by_word_overlap(self, pto_answer):
        """Issue 20: this criterion used to pass because 60% of its "content words" appeared in the
        answer. The offline judge cannot tell whether the answer states the accrual: an LLM judge must."""
        v = heuristic.judge_criterion("Response includes the monthly PTO accrual of 1.5 days", pto_answer)
        assert v.status == "skipped" and v.passed is None and v.score is None
        assert v.reasoning.startswith("needs an LLM judge") and "double quotes" in v.reasoning

    def test_listed_key_terms_are_checked_and_the_check_is_named(self, pto_answer):
        v = heuristic.judge_criterion('Response mentions "1.5 days" and "18 days"', pto_answer)
        assert v.status == "ok" and v.passed is True and v.score == 1.0
        assert "key terms" in v.reasoning and '"1.5 days" affirmed in reply 1' in v.reasoning

    def test_a_missing_key_term_fails_and_is_named(self, pto_answer):
        v = heuristic.judge_criterion('Agent mentions "parental leave"', pto_answer)
        assert v.status == "ok" and v.passed is False and v.score == 0.0
        assert '"parental leave" not in any reply' in v.reasoning
        # In prose the same ask is skipped: it used to fail by missing "content words".
        v = heuristic.judge_criterion("Agent explains the parental leave eligibility rules", pto_answer)
        assert v.status == "skipped" and v.reasoning.startswith("needs an LLM judge")

    def test_a_look_up_counts_only_for_a_criterion_that_asks_for_a_look_up_and_nothing_more(self, pto_answer):
        # Used to pass on "1 knowledge-base look-up(s), 1 with results": whether the PTO policy was
        # what it retrieved is more than a look-up.
        v = heuristic.judge_criterion("Agent retrieves PTO policy from the handbook KB", pto_answer)
        assert v.status == "skipped" and v.reasoning.startswith("needs an LLM judge")
        assert heuristic.judge_criterion("Agent searches the knowledge base", pto_answer).passed is True
        no_lookup = Transcript(
            messages=[{"role": "assistant", "content": "PTO is 18 days"}], tool_calls=[], bot_tools=BOT_TOOLS
        )
        v = heuristic.judge_criterion("Agent searches the knowledge base", no_lookup)
        assert v.passed is False and "0 successful knowledge-base look-up(s)" in v.reasoning
        v = heuristic.judge_criterion('Agent retrieves "PTO Policy" from the knowledge base', pto_answer)
        assert v.passed is True and "look-up results contain 1 of 1" in v.reasoning

    def test_handoff_criteria_and_their_negation(self, pto_answer, handoff):
        assert heuristic.judge_criterion("Agent hands off to a live agent", handoff).passed is True
        assert heuristic.judge_criterion("Agent hands off to a live agent", pto_answer).passed is False
        assert heuristic.judge_criterion("Agent does not transfer to a human", pto_answer).passed is True
        assert heuristic.judge_criterion("Agent does not transfer to a human", handoff).passed is False

    def test_uncheckable_criterion_is_skipped_not_guessed(self, pto_answer):
        for criterion in ("Agent is empathetic", "Agent should be", "Agent says the handbook does not cover it"):
            v = heuristic.judge_criterion(criterion, pto_answer)
            assert v.status == "skipped" and v.passed is None and v.score is None, criterion
            assert v.reasoning.startswith("needs an LLM judge: ")

    def test_tool_expectations_become_criteria(self, pto_answer):
        verdicts = heuristic.tool_verdicts(
            expected={"should_use_tools": ["search_kb"], "should_not_use_tools": ["live_handoff"]},
            transcript=pto_answer,
        )
        assert [(v["criterion"], v["passed"], v["kind"]) for v in verdicts_to_json(verdicts)] == [
            ("Uses tool search_kb", True, "should_use_tools"),
            ("Does not use tool live_handoff", True, "should_not_use_tools"),
        ]


def rule(rule_id, passes=(), fails=(), severity="medium", scope=None, ids=None):
    return {
        "id": rule_id,
        "name": rule_id.title(),
        "severity": severity,
        "component_scope": scope,
        "component_ids": ids or [],
        "evaluation_criteria": {"pass_conditions": list(passes), "fail_conditions": list(fails)},
    }


class TestRules:
    @pytest.mark.parametrize(
        "condition, expected",
        [
            ("Response is under 3 sentences", True),
            ("Response is under 1 sentences", False),
            ("Response has at most 1 sentence", True),
            ("Response has no more than 1 sentence", True),
            ("Response is fewer than 5 words", False),
            ("Agent calls search_kb", True),
            ("Agent does not call live_handoff", True),
            ("Agent uses the Live Chat Handoff tool", False),
        ],
    )
    def test_measurable_pass_conditions(self, pto_answer, condition, expected):
        v = heuristic.judge_rule(rule("R", passes=[condition]), pto_answer)
        assert v.status == "ok" and v.passed is expected, v.reasoning

    def test_fail_condition_met_fails_the_rule(self, handoff):
        v = heuristic.judge_rule(rule("NO_HANDOFF", fails=["Agent transfers to a human"]), handoff)
        assert v.passed is False and "MET" in v.reasoning

    def test_rule_with_only_unmeasurable_conditions_is_skipped(self, pto_answer):
        v = heuristic.judge_rule(rule("TONE", passes=["Tone is warm and professional"]), pto_answer)
        assert v.status == "skipped" and v.passed is None

    def test_a_rule_whose_pass_rests_on_an_unchecked_condition_is_skipped(self, pto_answer):
        """It used to pass on its checked condition alone ("not checked by the heuristic judge: 1")."""
        v = heuristic.judge_rule(rule("MIX", passes=["Tone is warm", "Response is under 4 sentences"]), pto_answer)
        assert v.status == "skipped" and v.passed is None
        assert v.reasoning.startswith("needs an LLM judge: 1 of its conditions") and "'Tone is warm'" in v.reasoning
        assert "'Response is under 4 sentences': met" in v.reasoning

    def test_a_checked_condition_that_breaks_the_rule_fails_it_whatever_is_unchecked(self, pto_answer, handoff):
        v = heuristic.judge_rule(rule("MIX", passes=["Tone is warm"], fails=["Agent transfers to a human"]), handoff)
        assert v.status == "ok" and v.passed is False and "MET" in v.reasoning and "Not checked" in v.reasoning
        v = heuristic.judge_rule(rule("MIX", passes=["Tone is warm", "Response is under 1 sentence"]), pto_answer)
        assert v.status == "ok" and v.passed is False and "NOT met" in v.reasoning


class TestAggregation:
    def test_scope_filters(self):
        kb = rule("KB", scope="knowledge_base", ids=["kb1"])
        general = rule("GEN")
        prompt = rule("P", scope="prompt", ids=["p1"])
        assert [r["id"] for r in (kb, general, prompt) if rule_in_scope(r, scope_filter=None, ids_filter=None)] == [
            "KB",
            "GEN",
            "P",
        ]
        assert [
            r["id"] for r in (kb, general, prompt) if rule_in_scope(r, scope_filter="knowledge_base", ids_filter=None)
        ] == ["KB", "GEN"]
        assert [r["id"] for r in (kb, general, prompt) if rule_in_scope(r, scope_filter=None, ids_filter=["p1"])] == [
            "GEN",
            "P",
        ]
        assert [
            r["id"] for r in (kb, general, prompt) if rule_in_scope(r, scope_filter="knowledge_base", ids_filter=["p1"])
        ] == ["GEN"]

    def test_pass_logic(self):
        ok = {"passed": True, "status": "ok"}
        bad = {"passed": False, "status": "ok"}
        err = {"passed": None, "status": "error"}
        assert outcome([ok], [{**bad, "severity": "medium"}]) == (True, True, True, "passed")
        assert outcome([ok], [{**bad, "severity": "high"}]) == (True, False, False, "failed")
        assert outcome([ok, bad], [{**ok, "severity": "high"}]) == (False, True, False, "failed")
        assert outcome([err], None) == (False, None, False, "failed")
        assert outcome([ok], [{**err, "severity": "high"}]) == (True, False, False, "unassessed")

    def test_component_scores(self):
        verdicts = [
            {"component_scope": "prompt", "passed": True, "status": "ok"},
            {"component_scope": "prompt", "passed": False, "status": "ok"},
            {"component_scope": None, "passed": True, "status": "ok"},
            {"component_scope": "function", "passed": None, "status": "error"},
        ]
        assert stored_component_scores(verdicts) == {
            "prompt": {"score": 0.5, "total": 2, "passed": 1},
            "function": {"score": 0.0, "total": 1, "passed": 0},
            "general": {"score": 1.0, "total": 1, "passed": 1},
        }


class TestHonestLimits:
    def test_conditional_conditions_are_left_unchecked(self, pto_answer):
        v = heuristic.judge_rule(
            rule("HANDOFF", passes=["live_handoff is called when a person is requested"]), pto_answer
        )
        assert v.status == "skipped"
        v = heuristic.judge_rule(rule("SEARCH", fails=["A policy answer is given without any search"]), pto_answer)
        assert v.status == "skipped"

    def test_mentioning_the_handbook_is_not_a_retrieval_check(self, pto_answer):
        v = heuristic.judge_rule(
            rule("G", fails=["The answer states a number the handbook does not contain"]), pto_answer
        )
        assert v.status == "skipped"

    def test_handing_the_conversation_over_is_a_handoff(self, handoff):
        v = heuristic.judge_criterion("Agent hands the conversation to a live agent", handoff)
        assert v.passed is True, v.reasoning


def test_an_unassessed_high_rule_makes_the_item_unassessed_never_passed():
    """Fail-closed (issue 16): a high-severity rule skipped or errored leaves the item unassessed."""
    skipped_high = {"passed": None, "status": "skipped", "severity": "high", "component_scope": "prompt"}
    error_high = {"passed": None, "status": "error", "severity": "high", "component_scope": "prompt"}
    ok = {"passed": True, "status": "ok"}
    assert outcome([ok], [skipped_high]) == (True, False, False, "unassessed")
    assert outcome([ok], [error_high]) == (True, False, False, "unassessed")
    # Issue 20: a criterion the judge skipped leaves the item unassessed too (it used to fail it).
    assert outcome([{"passed": None, "status": "skipped"}], []) == (False, True, False, "unassessed")
    assert outcome([{"passed": None, "status": "skipped"}], None) == (False, None, False, "unassessed")
    assert stored_component_scores([skipped_high, {**ok, "component_scope": "prompt"}]) == {
        "prompt": {"score": 1.0, "total": 1, "passed": 1}
    }


def test_a_failed_high_rule_or_criterion_wins_over_an_unassessed_one():
    skipped_high = {"passed": None, "status": "skipped", "severity": "high"}
    error_high = {"passed": None, "status": "error", "severity": "high"}
    failed_high = {"passed": False, "status": "ok", "severity": "high"}
    ok, bad = {"passed": True, "status": "ok"}, {"passed": False, "status": "ok"}
    assert outcome([ok], [skipped_high, failed_high]).outcome == "failed"
    assert outcome([ok], [failed_high, error_high]).outcome == "failed"
    assert outcome([bad], [skipped_high]).outcome == "failed"
    skipped = {"passed": None, "status": "skipped"}
    assert outcome([skipped, bad], [{**ok, "severity": "high"}]).outcome == "failed"
    assert outcome([skipped, ok], [failed_high]).outcome == "failed"
    assert outcome([skipped, {"passed": None, "status": "error"}], None).outcome == "failed"
    # Only high-severity rules gate the item: an unassessed medium rule leaves it passed.
    assert outcome([ok], [{**skipped_high, "severity": "medium"}, {**ok, "severity": "high"}]).outcome == "passed"


def test_coverage_counts_verdicts_by_status():
    verdicts = Verdict.list_from_json(
        [
            {"passed": True, "status": "ok"},
            {"passed": False, "status": "ok"},
            {"passed": None, "status": "skipped"},
            {"passed": None, "status": "error"},
        ],
        kind=RULE,
    )
    assert coverage(verdicts) == {"scored": 2, "skipped": 1, "errored": 1}
