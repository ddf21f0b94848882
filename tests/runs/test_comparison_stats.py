"""Issue 16 items 2 and 3: the statistics of a comparison (against textbook values) and judge
fingerprints (recorded on every verdict, different when the model or prompt template changes)."""

import pytest

from apps.core.llm import get_llm_client
from apps.runs import stats
from apps.runs.executor import JudgeChoice, RunOptions, execute_test_item
from apps.runs.judging import llm
from apps.runs.judging.fingerprint import distinct_judges, judge_changes
from apps.runs.judging.types import CRITERION, Verdict
from apps.runs.selectors import run_comparison, run_judge_fingerprints
from tests.bots.factories import make_bot_spec
from tests.fakes.openai_server import completion_body
from tests.runs.factories import PTO_ITEM, RUBRIC_SNAPSHOT, EvaluationResultFactory, EvaluationRunFactory, criterion
from tests.runs.test_llm_judging import TRANSCRIPT


def _pairs(both_passed=0, both_failed=0, pass_to_fail=0, fail_to_pass=0):
    return ([(True, True)] * both_passed + [(False, False)] * both_failed
            + [(True, False)] * pass_to_fail + [(False, True)] * fail_to_pass)


def test_exact_mcnemar_matches_the_binomial_textbook_value():
    # 10 pass→fail against 2 fail→pass: p = 2 · P(X ≤ 2 | n=12, ½) = 2 · (1 + 12 + 66) / 4096.
    assert stats.mcnemar_p(pass_to_fail=10, fail_to_pass=2) == pytest.approx(158 / 4096)
    # Symmetric, and 1 when the discordant pairs split evenly.
    assert stats.mcnemar_p(pass_to_fail=2, fail_to_pass=10) == pytest.approx(158 / 4096)
    assert stats.mcnemar_p(pass_to_fail=3, fail_to_pass=3) == 1.0
    # 6 to 0: 2 · (½)^6 = 0.03125, the smallest all-one-way count that is significant at 5%.
    assert stats.mcnemar_p(pass_to_fail=6, fail_to_pass=0) == pytest.approx(0.03125)
    assert stats.mcnemar_p(pass_to_fail=5, fail_to_pass=0) == pytest.approx(0.0625)


def test_no_discordant_pairs_is_p_one_and_within_noise():
    result = stats.paired_statistics(_pairs(both_passed=8, both_failed=2))
    assert result["mcnemar_p"] == 1.0 and result["verdict"] == "within_noise"
    assert result["changes"] == {"both_passed": 8, "both_failed": 2, "pass_to_fail": 0, "fail_to_pass": 0}
    assert result["pass_rate_diff_ci"] == [0.0, 0.0]


def test_verdicts_follow_the_direction_of_a_significant_change():
    assert stats.paired_statistics(_pairs(both_passed=20, pass_to_fail=10, fail_to_pass=2))["verdict"] == "worse"
    assert stats.paired_statistics(_pairs(both_passed=20, pass_to_fail=2, fail_to_pass=10))["verdict"] == "better"
    # One item lost in five: a pass rate from 100% to 80%, and noise.
    assert stats.paired_statistics(_pairs(both_passed=4, pass_to_fail=1))["verdict"] == "within_noise"


def test_bootstrap_interval_is_deterministic_and_brackets_the_difference():
    pairs = _pairs(both_passed=20, pass_to_fail=10, fail_to_pass=2)
    first, again = stats.pass_rate_diff_ci(pairs), stats.pass_rate_diff_ci(pairs)
    assert first == again
    low, high = first
    assert low < -8 / 32 < high and high < 0
    assert stats.pass_rate_diff_ci(_pairs(pass_to_fail=1)) is None


def test_llm_verdicts_record_the_model_the_server_reports(openai_server):
    openai_server.push(lambda body: (200, completion_body("judge-model-2026-11", '{"passed": true, "score": 1, '
                                                                                 '"reasoning": "ok"}'), None))
    verdict = llm.judge_criterion(get_llm_client(), "States the accrual rate", TRANSCRIPT).for_criterion("States it")
    fingerprint = verdict.fingerprint
    assert fingerprint["judge"] == "llm" and fingerprint["model"] == "judge-model"
    assert fingerprint["server_model"] == "judge-model-2026-11" and fingerprint["criterion"] == "States it"
    assert len(fingerprint["prompt_template"]) == 12 and fingerprint["judge_version"]
    assert Verdict.from_json(verdict.to_json()) == verdict, "stored and read back unchanged"


def test_fingerprints_differ_when_the_model_or_the_prompt_template_changes(openai_server, monkeypatch):
    openai_server.default = {"passed": True, "score": 1.0, "reasoning": "ok"}
    before = llm.judge_criterion(get_llm_client(), "c", TRANSCRIPT).fingerprint
    assert "server_model" not in before, "the server answered as the model asked"
    other_model = llm.judge_criterion(get_llm_client(model="judge-model-2"), "c", TRANSCRIPT).fingerprint
    monkeypatch.setattr(llm, "CRITERION_INSTRUCTIONS", "Decide, strictly, whether the criterion is met.\n\n")
    other_prompt = llm.judge_criterion(get_llm_client(), "c", TRANSCRIPT).fingerprint
    assert before["model"] != other_model["model"] and before["prompt_template"] == other_model["prompt_template"]
    assert before["prompt_template"] != other_prompt["prompt_template"] and before["model"] == other_prompt["model"]
    change = judge_changes(distinct_judges([before]), distinct_judges([other_prompt]))
    assert change == [f"prompt template {before['prompt_template'][:4]}… → {other_prompt['prompt_template'][:4]}…"]
    assert judge_changes(distinct_judges([before]), distinct_judges([other_model])) == [
        "model judge-model → judge-model-2"]


def test_every_verdict_of_an_executed_item_has_a_fingerprint(openai_server):
    openai_server.default = {"passed": True, "score": 1.0, "reasoning": "ok"}
    bot = make_bot_spec()
    for judge in (JudgeChoice(), JudgeChoice(client=get_llm_client())):
        outcome = execute_test_item(item=PTO_ITEM, bot=bot, rubric=RUBRIC_SNAPSHOT, conversation_id="c",
                                    options=RunOptions(judge=judge, rubric_version=3))
        verdicts = outcome.criteria_scores + outcome.rubric_scores
        assert verdicts and all(v["fingerprint"]["judge_version"] for v in verdicts)
        assert all(v["fingerprint"]["rubric_version"] == 3 for v in outcome.rubric_scores)


def _fingerprinted(text, passed, prompt):
    return {**criterion(text, passed), "fingerprint": {"judge": "llm", "model": "m", "prompt_template": prompt,
                                                       "judge_version": "1", "criterion": text}}


@pytest.mark.django_db
def test_comparison_reports_statistics_and_a_judge_change():
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position in range(8):
        EvaluationResultFactory(run=base, position=position, criteria_scores=[_fingerprinted("a", True, "3f2a" * 3)])
        EvaluationResultFactory(run=head, position=position,
                                criteria_scores=[_fingerprinted("a", position >= 6, "9c1d" * 3)])
    comparison = run_comparison(base=base, head=head)
    assert comparison["statistics"]["changes"]["pass_to_fail"] == 6
    assert comparison["statistics"]["verdict"] == "worse"
    assert comparison["statistics"]["mcnemar_p"] == pytest.approx(0.03125)
    assert comparison["judge_changed"] and comparison["judge_changes"] == ["prompt template 3f2a… → 9c1d…"]
    assert run_judge_fingerprints(runs=[base])[base.pk] == [
        {"judge": "llm", "model": "m", "prompt_template": "3f2a" * 3, "judge_version": "1"}]


def test_verdicts_stored_before_fingerprints_read_without_one():
    assert Verdict.from_json(criterion("a", True), kind=CRITERION).fingerprint is None
    assert "fingerprint" not in Verdict.from_json(criterion("a", True), kind=CRITERION).to_json()
