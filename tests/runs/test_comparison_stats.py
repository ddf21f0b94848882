"""Issue 16 items 2 and 3: the statistics of a comparison (against textbook values) and judge
fingerprints (recorded on every verdict, different when the model or prompt template changes).
Issue 20 point 3: Tango's score interval for the paired difference (published values, small n),
the verdict that needs the test and the interval to agree, and the comparison's buckets."""

import json
import math

import pytest
from scipy.stats import norm

from apps.core.llm.client import get_llm_client
from apps.runs import stats
from apps.runs.executor import JudgeChoice, RunOptions, execute_test_item
from apps.runs.judging import llm
from apps.runs.judging.fingerprint import distinct_judges, judge_changes
from apps.runs.judging.types import CRITERION, Verdict
from apps.runs.selectors import run_comparison, run_judge_fingerprints
from tests.bots.factories import make_bot_spec
from tests.fakes.openai_server import completion_body
from tests.runs.factories import (
    PTO_ITEM,
    RUBRIC_SNAPSHOT,
    EvaluationResultFactory,
    EvaluationRunFactory,
    criterion,
    rule,
)
from tests.runs.test_llm_judging import TRANSCRIPT


def _pairs(both_passed=0, both_failed=0, pass_to_fail=0, fail_to_pass=0):
    return (
        [(True, True)] * both_passed
        + [(False, False)] * both_failed
        + [(True, False)] * pass_to_fail
        + [(False, True)] * fail_to_pass
    )


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
    assert result["mcnemar_p"] == 1.0 and result["verdict"] == "within_noise" and result["disagreement"] is None
    assert result["changes"] == {"both_passed": 8, "both_failed": 2, "pass_to_fail": 0, "fail_to_pass": 0}
    # All ties: no change seen, but 10 items cannot rule out one of ±z²/(n + z²) = ±27.8 points.
    z2 = norm.ppf(0.975) ** 2
    assert result["pass_rate_diff_ci"] == [round(-z2 / (10 + z2), 4), round(z2 / (10 + z2), 4)] == [-0.2775, 0.2775]


def test_verdicts_follow_the_direction_of_a_significant_change():
    assert stats.paired_statistics(_pairs(both_passed=20, pass_to_fail=10, fail_to_pass=2))["verdict"] == "worse"
    assert stats.paired_statistics(_pairs(both_passed=20, pass_to_fail=2, fail_to_pass=10))["verdict"] == "better"
    # One item lost in five: a pass rate from 100% to 80%, and noise.
    assert stats.paired_statistics(_pairs(both_passed=4, pass_to_fail=1))["verdict"] == "within_noise"


# --- Tango's score interval ------------------------------------------------------------------------
# stats.tango_interval(gained=fail→pass, lost=pass→fail, n) is head's pass rate minus base's. In the
# papers' notation (x12, x21) with the difference (x12 - x21)/n, gained is x12 and lost is x21.


def test_tango_interval_matches_fagerland_lydersen_laake():
    # Fagerland, Lydersen & Laake (2014, Stat Med 33:2850-2875, "Recommended tests and confidence
    # intervals for paired binomial proportions"), Table II: airway hyper-responsiveness before and
    # after stem cell transplantation (Bentur et al. 2009), x11=1, x12=1, x21=7, x22=12; their Table V
    # gives the Tango asymptotic score interval -0.517 to -0.026 (estimate -0.286).
    low, high = stats.tango_interval(gained=1, lost=7, n=21)
    assert (round(low, 3), round(high, 3)) == (-0.517, -0.026)


def test_tango_interval_matches_tango_1998():
    # Tango (1998, Stat Med 17:891-908) section 6.2: the sleeping-difficulties data of Karacan et al.,
    # 32 pairs with 9 and 3 discordant: 95% score interval -0.027 to 0.390.
    low, high = stats.tango_interval(gained=9, lost=3, n=32)
    assert (round(low, 3), round(high, 3)) == (-0.027, 0.390)
    # Section 6.1: the soft-contact-lens cross-over trial, 44 patients, one discordant pair (x12=0,
    # x21=1): the score statistic at a difference of 0.1 is 1.709 in absolute value, and the 90%
    # interval's lower limit is -0.096 (its upper limit mirrors the statistic: -0.1 is just outside).
    assert abs(stats.tango_score(-0.1, gained=0, lost=1, n=44)) == pytest.approx(1.709, abs=5e-4)
    assert abs(stats.tango_score(0.1, gained=1, lost=0, n=44)) == pytest.approx(1.709, abs=5e-4)
    low, high = stats.tango_interval(gained=0, lost=1, n=44, confidence=0.90)
    assert round(low, 3) == -0.096 and 0 < high < 0.1


def test_tango_score_at_zero_is_mcnemars_statistic():
    # At no difference the score statistic is McNemar's uncorrected (x12 - x21) / sqrt(x12 + x21).
    assert stats.tango_score(0.0, gained=9, lost=3, n=32) == pytest.approx(6 / math.sqrt(12))


def test_three_of_three_flipped_is_an_interval_not_a_point_and_within_noise():
    result = stats.paired_statistics(_pairs(fail_to_pass=3))
    low, high = result["pass_rate_diff_ci"]
    # Closed form for n of n gained: T(d) = sqrt(n(1 - d)/(1 + d)) = z, so d = (n - z²)/(n + z²).
    z2 = norm.ppf(0.975) ** 2
    assert low == round((3 - z2) / (3 + z2), 4) == -0.123 and high == 1.0
    assert result["mcnemar_p"] == 0.25 and result["verdict"] == "within_noise" and result["disagreement"] is None
    # And the mirror image: 3 of 3 lost.
    assert stats.paired_statistics(_pairs(pass_to_fail=3))["pass_rate_diff_ci"] == [-1.0, 0.123]


def test_tango_interval_at_n_zero_and_one():
    assert stats.tango_interval(gained=0, lost=0, n=0) is None
    empty = stats.paired_statistics([])
    assert empty["pass_rate_diff_ci"] is None and empty["verdict"] == "within_noise" and empty["assessed_items"] == 0
    z2 = norm.ppf(0.975) ** 2
    # One item, unchanged: ±z²/(1 + z²); one item gained: [(1 - z²)/(1 + z²), 1]; one lost: the mirror.
    assert stats.tango_interval(gained=0, lost=0, n=1) == [round(-z2 / (1 + z2), 4), round(z2 / (1 + z2), 4)]
    assert stats.tango_interval(gained=1, lost=0, n=1) == [round((1 - z2) / (1 + z2), 4), 1.0]
    assert stats.tango_interval(gained=0, lost=1, n=1) == [-1.0, round((z2 - 1) / (1 + z2), 4)]


def test_tango_interval_reaches_a_boundary_only_when_the_estimate_is_on_it():
    z2 = norm.ppf(0.975) ** 2
    for n in (2, 5, 40, 1000):
        low, high = stats.tango_interval(gained=n, lost=0, n=n)
        assert high == 1.0 and low == pytest.approx((n - z2) / (n + z2), abs=1e-4)
        low, high = stats.tango_interval(gained=n - 1, lost=0, n=n)
        assert -1 < low < (n - 1) / n < high < 1
    # Every item flipped, half each way: wide, symmetric, inside (-1, 1).
    low, high = stats.tango_interval(gained=2, lost=2, n=4)
    assert low == -high and -1 < low < 0
    with pytest.raises(ValueError):
        stats.tango_interval(gained=3, lost=2, n=4)


def test_tango_interval_contains_the_estimate_and_narrows_with_n():
    widths = []
    for n in (10, 100, 1000, 100_000):
        gained, lost = n // 10, n // 5
        low, high = stats.tango_interval(gained=gained, lost=lost, n=n)
        assert low < (gained - lost) / n < high
        widths.append(high - low)
    assert widths == sorted(widths, reverse=True)


def test_tango_interval_is_exactly_the_deltas_the_score_test_does_not_reject():
    # Every table of up to 8 items: the limits found by brentq are where |T| crosses z on a fine
    # grid, and the accepted deltas form one unbroken run between them.
    z = norm.ppf(0.975)
    grid = [-1 + 2 * k / 2000 for k in range(1, 2000)]
    for n in range(1, 9):
        for gained in range(n + 1):
            for lost in range(n - gained + 1):
                low, high = stats.tango_interval(gained=gained, lost=lost, n=n)
                accepted = [d for d in grid if abs(stats.tango_score(d, gained=gained, lost=lost, n=n)) <= z]
                assert accepted == [d for d in grid if low <= d <= high] or all(
                    abs(d - low) < 2e-3 or abs(d - high) < 2e-3
                    for d in set(accepted) ^ {d for d in grid if low <= d <= high}
                ), (n, gained, lost)


# --- the verdict: the test and the interval must agree -------------------------------------------


def test_the_verdict_needs_the_test_and_the_interval_on_the_same_side():
    # 5 of 5 gained: the interval [0.131, 1] excludes 0, but McNemar p = 0.0625: within noise, and said.
    five = stats.paired_statistics(_pairs(fail_to_pass=5))
    assert five["pass_rate_diff_ci"][0] > 0 and five["mcnemar_p"] == pytest.approx(0.0625)
    assert five["verdict"] == "within_noise"
    assert five["disagreement"].startswith("the 95% interval excludes 0 but McNemar's exact test is not significant")
    # 6 of 6: both agree.
    six = stats.paired_statistics(_pairs(fail_to_pass=6))
    assert six["verdict"] == "better" and six["disagreement"] is None
    assert stats.paired_statistics(_pairs(pass_to_fail=6))["verdict"] == "worse"
    # The rule itself, for a significant p with an interval on either side or across 0.
    assert stats.comparison_verdict(p=0.01, interval=[-0.3, -0.1]) == "worse"
    assert stats.comparison_verdict(p=0.01, interval=[0.1, 0.3]) == "better"
    assert stats.comparison_verdict(p=0.01, interval=[-0.1, 0.3]) == "within_noise"
    assert stats.comparison_verdict(p=0.2, interval=[0.1, 0.3]) == "within_noise"
    assert stats.comparison_verdict(p=0.01, interval=None) == "within_noise"
    assert stats.disagreement(p=0.01, interval=[-0.1, 0.3]) == (
        "McNemar's exact test is significant at 5% but the 95% interval includes 0"
    )
    assert stats.disagreement(p=0.5, interval=[-0.1, 0.3]) is None


def test_statistics_of_a_hundred_thousand_items_are_plain_numbers():
    pairs = _pairs(both_passed=80_000, pass_to_fail=6_000, fail_to_pass=2_000, both_failed=12_000)
    result = stats.paired_statistics(pairs)
    low, high = result["pass_rate_diff_ci"]
    assert low < -0.04 < high < 0 and result["verdict"] == "worse"
    assert json.dumps(result)


def test_llm_verdicts_record_the_model_the_server_reports(openai_server):
    openai_server.push(
        lambda body: (
            200,
            completion_body("judge-model-2026-11", '{"passed": true, "score": 1, "reasoning": "ok"}'),
            None,
        )
    )
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
        "model judge-model → judge-model-2"
    ]


def test_every_verdict_of_an_executed_item_has_a_fingerprint(openai_server):
    openai_server.default = {"passed": True, "score": 1.0, "reasoning": "ok"}
    bot = make_bot_spec()
    for judge in (JudgeChoice(), JudgeChoice(client=get_llm_client())):
        outcome = execute_test_item(
            item=PTO_ITEM,
            bot=bot,
            rubric=RUBRIC_SNAPSHOT,
            conversation_id="c",
            options=RunOptions(judge=judge, rubric_version=3),
        )
        verdicts = outcome.criteria_scores + outcome.rubric_scores
        assert verdicts and all(v["fingerprint"]["judge_version"] for v in verdicts)
        assert all(v["fingerprint"]["rubric_version"] == 3 for v in outcome.rubric_scores)


def _fingerprinted(text, passed, prompt):
    return {
        **criterion(text, passed),
        "fingerprint": {
            "judge": "llm",
            "model": "m",
            "prompt_template": prompt,
            "judge_version": "1",
            "criterion": text,
        },
    }


@pytest.mark.django_db
def test_comparison_reports_statistics_and_a_judge_change():
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position in range(8):
        EvaluationResultFactory(run=base, position=position, criteria_scores=[_fingerprinted("a", True, "3f2a" * 3)])
        EvaluationResultFactory(
            run=head, position=position, criteria_scores=[_fingerprinted("a", position >= 6, "9c1d" * 3)]
        )
    comparison = run_comparison(base=base, head=head)
    assert comparison["statistics"]["changes"]["pass_to_fail"] == 6
    assert comparison["statistics"]["verdict"] == "worse"
    assert comparison["statistics"]["mcnemar_p"] == pytest.approx(0.03125)
    assert comparison["judge_changed"] and comparison["judge_changes"] == ["prompt template 3f2a… → 9c1d…"]
    assert run_judge_fingerprints(runs=[base])[base.pk] == [
        {"judge": "llm", "model": "m", "prompt_template": "3f2a" * 3, "judge_version": "1"}
    ]


def test_verdicts_stored_before_fingerprints_read_without_one():
    assert Verdict.from_json(criterion("a", True), kind=CRITERION).fingerprint is None
    assert "fingerprint" not in Verdict.from_json(criterion("a", True), kind=CRITERION).to_json()


# --- buckets: failed never includes unassessed ------------------------------------------------------


def _verdicts(outcome: str) -> dict:
    """Result fields for an outcome: passed, failed, or unassessed (criteria met, its high rule skipped)."""
    if outcome == "unassessed":
        return {"criteria_scores": [criterion("c", True)], "rubric_scores": [rule("R", False, status="skipped")]}
    return {"criteria_scores": [criterion("c", outcome == "passed")], "rubric_scores": None}


# (before, after) per item, None where the item is not in that run, and the bucket it lands in.
TRANSITIONS = [
    ("passed", "failed", "regressions"),
    ("failed", "passed", "fixes"),
    ("failed", "failed", "still_failing"),
    ("passed", "passed", "unchanged_pass"),
    ("unassessed", "passed", "newly_assessed"),
    ("unassessed", "failed", "newly_assessed"),
    ("passed", "unassessed", "no_longer_assessed"),
    ("failed", "unassessed", "no_longer_assessed"),
    ("unassessed", "unassessed", "still_unassessed"),
    (None, "passed", "new_items"),
    ("failed", None, "dropped"),
]


def _runs_with(transitions):
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position, (before, after, _) in enumerate(transitions):
        for run, outcome in ((base, before), (head, after)):
            if outcome is not None:
                EvaluationResultFactory(run=run, position=position, **_verdicts(outcome))
    return base, head


def test_category_of_every_transition():
    from apps.runs.comparison import ItemVerdict, category

    verdict = {
        "passed": ItemVerdict(1, 1, 0, 0),
        "failed": ItemVerdict(1, 0, 1, 0),
        "unassessed": ItemVerdict(1, 0, 0, 1),
        None: None,
    }
    for before, after, bucket in TRANSITIONS:
        assert category(verdict[before], verdict[after]) == bucket, (before, after)
    # With repeats: passed only if every attempt passed; one failed attempt fails it; else unassessed.
    assert category(ItemVerdict(3, 3, 0, 0), ItemVerdict(3, 2, 0, 1)) == "no_longer_assessed"
    assert category(ItemVerdict(3, 2, 0, 1), ItemVerdict(3, 1, 1, 1)) == "newly_assessed"
    assert category(ItemVerdict(3, 2, 1, 0), ItemVerdict(3, 3, 0, 0)) == "fixes"


@pytest.mark.django_db
def test_comparison_buckets_and_statistics_leave_unassessed_items_out():
    base, head = _runs_with(TRANSITIONS)
    comparison = run_comparison(base=base, head=head)
    assert comparison["buckets"] == {
        "regressions": 1,
        "fixes": 1,
        "still_failing": 1,
        "unchanged_pass": 1,
        "newly_assessed": 2,
        "no_longer_assessed": 2,
        "still_unassessed": 1,
        "new_items": 1,
        "dropped": 1,
    }
    assert [h["position"] for _, h in comparison["newly_assessed"]] == [4, 5]
    assert [h["outcome"] for _, h in comparison["newly_assessed"]] == ["passed", "failed"]
    assert [(b["outcome"], h["outcome"]) for b, h in comparison["still_unassessed"]] == [("unassessed", "unassessed")]
    assert [b["position"] for b, _ in comparison["fixes"]] == [1], "unassessed → passed is not a fix"
    assert [b["position"] for b, _ in comparison["still_failing"]] == [2], "unassessed is not failing"
    statistics = comparison["statistics"]
    # 9 items in both runs, 4 of them assessed in both: only those enter McNemar and Tango.
    assert (statistics["paired_items"], statistics["assessed_items"]) == (9, 4)
    assert statistics["changes"] == {"both_passed": 1, "both_failed": 1, "pass_to_fail": 1, "fail_to_pass": 1}
    assert statistics["pass_rate_diff_ci"] == stats.tango_interval(gained=1, lost=1, n=4)


@pytest.mark.django_db
def test_comparison_api_reports_buckets_assessed_items_and_a_disagreement(api):
    # Five items fail → pass, one more unassessed in the base run: the interval excludes 0, the test does not.
    base, head = _runs_with([("failed", "passed", "fixes")] * 5 + [("unassessed", "passed", "newly_assessed")])
    body = api.get(f"/api/v1/runs/{base.run_id}/compare/{head.run_id}").json()
    assert (body["paired_items"], body["assessed_items"]) == (6, 5)
    assert body["buckets"]["fixes"] == 5 and body["buckets"]["newly_assessed"] == 1
    assert body["changes"] == {"both_passed": 0, "both_failed": 0, "pass_to_fail": 0, "fail_to_pass": 5}
    assert body["pass_rate_diff_ci"] == [0.131, 1.0] and body["mcnemar_p"] == pytest.approx(0.0625)
    assert body["verdict"] == "within_noise" and "McNemar's exact test is not significant" in body["disagreement"]
    assert body["regressions"] == [] and body["regressions_total"] == 0


@pytest.mark.django_db
def test_comparison_api_answers_every_field_in_the_contracts_order(api):
    """ComparisonOut reads run_comparison's answer (its runs, figures, statistics and the regressed
    pairs) directly: every field, in order, with the values the runs give."""
    base, head = _runs_with([("passed", "failed", "regressions"), ("passed", None, "dropped"), (None, "passed", "new")])
    body = api.get(f"/api/v1/runs/{base.run_id}/compare/{head.run_id}").json()
    assert list(body) == [
        "base_run_id",
        "head_run_id",
        "base_pass_rate",
        "head_pass_rate",
        "paired_items",
        "assessed_items",
        "changes",
        "buckets",
        "mcnemar_p",
        "pass_rate_diff_ci",
        "verdict",
        "verdict_text",
        "disagreement",
        "regressions",
        "regressions_total",
        "new_items",
        "dropped_items",
        "judge_changed",
        "judge_changes",
        "base_judge_fingerprints",
        "head_judge_fingerprints",
    ]
    assert (body["base_run_id"], body["head_run_id"]) == (str(base.run_id), str(head.run_id))
    assert (body["base_pass_rate"], body["head_pass_rate"]) == (1.0, 0.5)
    assert (body["paired_items"], body["assessed_items"], body["new_items"], body["dropped_items"]) == (1, 1, 1, 1)
    assert (body["verdict"], body["verdict_text"], body["disagreement"]) == ("within_noise", "within noise", None)
    assert body["mcnemar_p"] == 1.0 and body["regressions_total"] == 1
    [regression] = body["regressions"]
    before, after = base.results.get(position=0), head.results.get(position=0)
    [(base_row, head_row)] = run_comparison(base=base, head=head)["regressions"]
    assert regression == {
        "test_case_id": str(after.test_case_id),
        "item_name": after.item_name,
        "item_type": after.item_type,
        "base_result_id": str(before.result_id),
        "head_result_id": str(after.result_id),
        "question": head_row["question"],
        "base_answer": base_row["answer"],
        "head_answer": head_row["answer"],
        "failure_reason": head_row["failure_reason"],
    }
    assert regression["failure_reason"] and regression["question"]
