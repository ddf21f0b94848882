import sys

import pytest
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper

from apps.runs.judging import heuristic
from apps.runs.judging.types import Verdict
from apps.runs.management.commands.evalrun import Command
from apps.runs.models import EvaluationResult, EvaluationRun
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET, WIFI_CRITERION, make_items

# transaction=True: with --wait the command polls until the run finishes, inside call_command; the run
# starts only when run_create's transaction commits, which the plain db fixture's open transaction
# would put off until after the command has given up waiting.
pytestmark = pytest.mark.django_db(transaction=True)


def run_cli(*extra):
    args = [
        "evalrun",
        "--agent",
        PLAN_AGENT,
        "--test-set",
        str(PLAN_TEST_SET),
        "--judge-model",
        "heuristic",
        "--poll",
        "0.01",
        "--timeout",
        "30",
        *extra,
    ]
    return call_command(*args)


def test_wait_prints_progress_and_summary(plan, capsys):
    run_cli("--rubric", str(PLAN_RUBRIC), "--wait", "--concurrency", "4")
    out = capsys.readouterr().out
    assert "completed: 6/6 items done, 4 passed, 2 failed" in out
    assert "pass rate   : 4/6 = 66.7%" in out and "rubric rules:" in out and "FAILED item 2" in out


def test_fail_under_exits_non_zero(plan):
    with pytest.raises(CommandError, match="below 90.0%"):
        run_cli("--wait", "--fail-under", "0.9")
    run_cli("--wait", "--fail-under", "0.5")


def test_unknown_agent_is_a_clear_error(plan):
    with pytest.raises(CommandError, match="No bot"):
        call_command("evalrun", "--agent", "c" * 24, "--test-set", str(PLAN_TEST_SET))


def test_wait_says_why_each_item_failed_and_links_it(plan, capsys, settings):
    run_cli("--rubric", str(PLAN_RUBRIC), "--wait")
    out = capsys.readouterr().out
    failed_block = out[out.index("  FAILED item 2") :].splitlines()
    assert failed_block[0] == "  FAILED item 2"
    assert failed_block[1].startswith('    criterion failed: Response mentions "wifi password" — ')
    assert any(line.strip().startswith(f"{settings.EVALSITE_BASE_URL}/console/results/") for line in failed_block[1:6])
    assert "FAILED item 2:" not in out


def test_failed_item_lists_rules_with_severity_and_errors(capsys, settings):
    settings.EVALSITE_BASE_URL = "https://evalsite.example"
    rule = Verdict.of(passed=False, reasoning="Answer is  six\nparagraphs long.", judge="llm").for_rule(
        {"id": "BRIEF_RESPONSES", "name": "Brief", "severity": "medium"}
    )
    errored = Verdict(passed=None, score=None, reasoning="timeout", judge="llm", status="error").for_rule(
        {"id": "NO_PII", "severity": "high"}
    )
    skipped = Verdict(passed=None, score=None, reasoning="", judge="heuristic", status="skipped").for_rule(
        {"id": "TONE"}
    )
    passed = Verdict.of(passed=True, reasoning="ok", judge="llm").for_criterion("Mentions 15 days")
    result = EvaluationResult(
        item_name="PTO Policy Inquiry",
        error="",
        criteria_scores=[passed.to_json()],
        rubric_scores=[rule.to_json(), errored.to_json(), skipped.to_json()],
    )
    command = Command()
    command.stdout = OutputWrapper(sys.stdout)
    command._failed_result(result)
    assert capsys.readouterr().out.splitlines() == [
        "  FAILED PTO Policy Inquiry",
        "    rule BRIEF_RESPONSES (medium) failed — Answer is six paragraphs long.",
        "    rule NO_PII (high) error — timeout",
        "    1 skipped (the judge could not assess them)",
        f"    https://evalsite.example/console/results/{result.result_id}/",
    ]


def _newest_run():
    return EvaluationRun.objects.order_by("-created_at", "-pk").first()


def test_baseline_latest_within_noise_passes(plan, capsys):
    run_cli("--wait")
    capsys.readouterr()
    run_cli("--wait", "--baseline", "latest")
    out = capsys.readouterr().out
    assert "compared with baseline" in out and ": within noise" in out
    assert (
        "6 of 6 paired items assessed in both: 4 both passed, 2 both failed, 0 pass→fail, 0 fail→pass; "
        "McNemar p = 1; pass rate difference 95% CI [-39.0%, +39.0%] (Tango)"
    ) in out


def test_baseline_fails_only_on_a_significant_regression_and_lists_the_items(plan, capsys):
    plan["items"] = make_items(18)
    run_cli("--wait")
    baseline = _newest_run()
    # The baseline passed everything: the 6 items the bot cannot answer are 6 regressions, p = 0.031.
    baseline.results.update(passed=True, outcome="passed")
    with pytest.raises(
        CommandError, match=r"significant regression against baseline .*: 6 items went from pass to fail"
    ):
        run_cli("--wait", "--baseline", str(baseline.run_id))
    out = capsys.readouterr().out
    assert ": worse, significant at 95%" in out and out.count("  REGRESSED item ") == 6
    # Five regressions out of 18 are not significant (p = 0.0625): the build stays green, although
    # Tango's interval excludes 0; the output says the two disagree.
    baseline.results.filter(position=2).update(passed=False, outcome="failed")
    run_cli("--wait", "--baseline", str(baseline.run_id))
    out = capsys.readouterr().out
    assert ": within noise (the test and the interval disagree: the 95% interval excludes 0 but McNemar's exact " in out


def test_baseline_with_another_judge_is_refused_unless_allowed(plan, openai_server, capsys):
    openai_server.default = {"passed": True, "score": 1.0, "reasoning": "ok"}
    run_cli("--wait")
    baseline = _newest_run()
    llm_judged = [
        "evalrun",
        "--agent",
        PLAN_AGENT,
        "--test-set",
        str(PLAN_TEST_SET),
        "--judge-model",
        "judge-model",
        "--poll",
        "0.01",
        "--timeout",
        "30",
        "--wait",
        "--baseline",
        str(baseline.run_id),
    ]
    with pytest.raises(
        CommandError,
        match=r"the judge changed since baseline .*model none → judge-model.*"
        r"--allow-judge-change",
    ):
        call_command(*llm_judged)
    call_command(*llm_judged, "--allow-judge-change")
    assert "warning: the judge changed since the baseline: " in capsys.readouterr().out


def test_baseline_needs_wait_and_a_run_id(plan):
    with pytest.raises(CommandError, match="add --wait"):
        run_cli("--baseline", "latest")
    with pytest.raises(CommandError, match='run id or "latest"'):
        run_cli("--wait", "--baseline", "yesterday")
    with pytest.raises(CommandError, match="baseline: No run"):
        run_cli("--wait", "--baseline", "00000000-0000-0000-0000-000000000000")


def _judge_errors_on(monkeypatch, criterion_text):
    """The judge raises on one criterion (as an LLM judge that is down would): the engine records an
    error verdict for it and judges the item's other verdicts."""
    real = heuristic.judge_criterion

    def judge(criterion, transcript):
        if criterion == criterion_text:
            raise ConnectionError("judge down")
        return real(criterion, transcript)

    monkeypatch.setattr(heuristic, "judge_criterion", judge)


def test_max_errors_fails_the_gate_when_the_judge_errored_and_says_why(plan, monkeypatch, capsys):
    # Items 2 and 5 ask what the handbook does not cover; their one criterion errors.
    _judge_errors_on(monkeypatch, WIFI_CRITERION)
    with pytest.raises(CommandError, match=r"errored verdicts .* is above --max-errors 0.0%"):
        run_cli("--wait")
    assert "errored" in capsys.readouterr().out
    run_cli("--wait", "--max-errors", "0.5")


def test_max_errors_must_be_a_share(plan):
    with pytest.raises(CommandError, match="between 0 and 1"):
        run_cli("--wait", "--max-errors", "2")


def test_unassessed_items_fail_the_gate_unless_allowed(plan, monkeypatch, capsys):
    """A high-severity rule the judge skips leaves the item unassessed: never a green build by default."""
    # The plan's rubric has two high-severity rules; the judge skips every rule.
    monkeypatch.setattr(
        heuristic, "judge_rule", lambda rule, transcript: Verdict.skipped("heuristic:v1", "cannot judge")
    )
    with pytest.raises(CommandError, match=r"^4 items unassessed"):
        run_cli("--rubric", str(PLAN_RUBRIC), "--wait")
    out = capsys.readouterr().out
    # The two items whose criteria failed stay failed: a known failure wins over an unjudged rule.
    assert "completed: 6/6 items done, 0 passed, 2 failed, 4 unassessed" in out and "UNASSESSED item 0" in out
    run_cli("--rubric", str(PLAN_RUBRIC), "--wait", "--allow-unassessed")
