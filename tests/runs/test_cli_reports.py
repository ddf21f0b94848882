"""evalrun for CI (issue 16, item 5): --repeats, --confidence against --fail-under, a JUnit XML
report read back by a JUnit parser (junitparser, as a CI server reads it), and a JSON report."""

import json

import pytest
from django.core.management import CommandError, call_command
from junitparser import Error, Failure, JUnitXml, Properties, Skipped

from apps.runs.judging import heuristic
from apps.runs.judging.types import Verdict
from apps.runs.models import EvaluationRun
from apps.runs.stats import wilson_interval
from tests.bots.factories import make_bot_spec
from tests.fakes.bot_server import FakeBotServer
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET, REPEAT_ITEMS, repeat_answers

# transaction=True: --wait polls inside call_command for a run that starts only once run_create commits.
pytestmark = pytest.mark.django_db(transaction=True)


def run_cli(*extra):
    return call_command(
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
    )


def suite_of(path):
    suites = list(JUnitXml.fromfile(str(path)))
    assert len(suites) == 1
    return suites[0]


def test_junit_has_one_testcase_per_item_with_the_failed_verdicts_and_reasoning(plan, tmp_path):
    path = tmp_path / "evalsite.xml"
    run_cli("--rubric", str(PLAN_RUBRIC), "--wait", "--junit", str(path), "--label", "nightly")
    suite = suite_of(path)
    assert (suite.name, suite.tests, suite.failures, suite.errors, suite.skipped) == ("nightly", 6, 2, 0, 0)
    cases = {case.name: case for case in suite}
    assert set(cases) == {f"item {n}" for n in range(6)}
    failed = cases["item 2"].result
    assert len(failed) == 1 and isinstance(failed[0], Failure) and failed[0].type == "failed"
    assert failed[0].text.startswith('criterion failed: Response mentions "wifi password" — ')
    assert cases["item 0"].is_passed and "/console/results/" in cases["item 0"].system_out
    # The classname comes from the test set (its id here: the plan's test set has no row), so a CI
    # server follows each item's history from run to run.
    assert {case.classname for case in cases.values()} == {"evalsite." + str(PLAN_TEST_SET).replace("-", "_")}
    run = EvaluationRun.objects.get()
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["run_id"] == str(run.run_id) and properties["pass_rate"] == str(run.pass_rate)


def test_repeats_mark_flaky_items_in_junit_and_report_everything_in_json(plan, tmp_path, capsys):
    plan["items"] = REPEAT_ITEMS
    junit, report = tmp_path / "r.xml", tmp_path / "r.json"
    with FakeBotServer(repeat_answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run_cli("--repeats", "3", "--wait", "--junit", str(junit), "--json", str(report))
    out = capsys.readouterr().out
    assert "3 items x 3 attempts" in out and "pass^3 33.3% (every attempt passed), pass@3 66.7%" in out
    assert "1 flaky" in out and "FAILED (attempt 2) sometimes" in out
    cases = {case.name: case for case in suite_of(junit)}
    sometimes = cases["sometimes"]
    assert sometimes.result[0].type == "flaky" and sometimes.result[0].message == "flaky: 2 of 3 attempts passed"
    assert "attempt 2: error: Bot error" in sometimes.result[0].text
    assert {p.name: p.value for p in sometimes.child(Properties)} == {"flaky": "true"}
    assert cases["never"].result[0].type == "failed" and cases["always"].is_passed
    data = json.loads(report.read_text())
    assert data["run"]["repeats"] == 3 and data["run"]["flaky_items"] == 1
    assert [i["item_name"] for i in data["items"] if i["flaky"]] == ["sometimes"]
    assert data["comparison"] is None and data["gate"] == {"passed": True, "reasons": []}


def test_confidence_compares_the_intervals_lower_bound_with_fail_under(plan, capsys, tmp_path):
    # 4 of 6 pass: 66.7% clears 50%, but the 95% Wilson interval starts at 30%.
    run_cli("--wait", "--fail-under", "0.5")
    low = wilson_interval(4, 6)[0]
    report = tmp_path / "gate.json"
    with pytest.raises(CommandError, match=rf"the pass rate's 95% lower bound {low:.1%} is below 50.0%"):
        run_cli("--wait", "--fail-under", "0.5", "--confidence", "0.95", "--json", str(report))
    assert "pass rate 66.7%, 95% interval [30.0%, 90.3%]" in capsys.readouterr().out
    # The reports are written before the exit code.
    gate = json.loads(report.read_text())["gate"]
    assert gate["passed"] is False and "lower bound" in gate["reasons"][0]
    run_cli("--wait", "--fail-under", "0.25", "--confidence", "0.95")


def test_json_carries_the_comparison_with_the_baseline(plan, tmp_path):
    run_cli("--wait")
    report = tmp_path / "cmp.json"
    run_cli("--wait", "--baseline", "latest", "--json", str(report))
    comparison = json.loads(report.read_text())["comparison"]
    assert comparison["verdict"] == "within_noise" and comparison["paired_items"] == 6
    assert comparison["judge_changed"] is False


def test_unassessed_items_are_errors_in_junit_never_failures_or_skipped_when_allowed(plan, monkeypatch, tmp_path):
    """An unassessed item is not a failure: it is an <error> (the judge could not judge it, so the
    build cannot go green) with a message saying why, or <skipped> under --allow-unassessed."""
    monkeypatch.setattr(
        heuristic, "judge_rule", lambda rule, transcript: Verdict.skipped("heuristic:v1", "cannot judge")
    )
    path = tmp_path / "u.xml"
    with pytest.raises(CommandError, match="items unassessed"):
        run_cli("--rubric", str(PLAN_RUBRIC), "--wait", "--junit", str(path))
    suite = suite_of(path)
    assert (suite.failures, suite.errors, suite.skipped) == (2, 4, 0)
    unassessed = [c for c in suite if c.result and c.result[0].type == "unassessed"]
    assert len(unassessed) == 4 and all(isinstance(c.result[0], Error) for c in unassessed)
    assert unassessed[0].result[0].message.startswith("unassessed") and "(high) skipped" in unassessed[0].result[0].text
    assert all(c.result[0].type != "unassessed" for c in suite if c.result and isinstance(c.result[0], Failure))
    run_cli("--rubric", str(PLAN_RUBRIC), "--wait", "--junit", str(path), "--allow-unassessed")
    suite = suite_of(path)
    assert (suite.failures, suite.errors, suite.skipped) == (2, 0, 4)
    assert all(isinstance(c.result[0], Skipped) for c in suite if c.result and not isinstance(c.result[0], Failure))


def test_a_cancelled_run_reports_its_unfinished_items_as_errors(plan, monkeypatch, tmp_path):
    from apps.runs import services

    monkeypatch.setattr(services, "_enqueue", lambda ids: services.run_cancel(run=EvaluationRun.objects.get()))
    path = tmp_path / "c.xml"
    with pytest.raises(CommandError, match="ended cancelled"):
        run_cli("--wait", "--junit", str(path))
    suite = suite_of(path)
    assert suite.errors == 6 and all(isinstance(c.result[0], Error) for c in suite)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--wait", "--confidence", "0.95"], "add --fail-under"),
        (["--wait", "--fail-under", "0.5", "--confidence", "1.5"], "between 0 and 1"),
        (["--junit", "x.xml"], "add --wait"),
        (["--json", "x.json"], "add --wait"),
        (["--wait", "--repeats", "11"], "repeats must be a whole number between 1 and 10"),
    ],
)
def test_bad_options_are_clear_errors_and_start_nothing(plan, args, message):
    with pytest.raises(CommandError, match=message):
        run_cli(*args)
    assert EvaluationRun.objects.count() == 0


def test_an_unwritable_report_path_is_a_clear_error(plan, tmp_path):
    with pytest.raises(CommandError, match="cannot write .*missing"):
        run_cli("--wait", "--junit", str(tmp_path / "missing" / "r.xml"))


def test_summary_counts_items_not_attempts_and_says_so(plan, capsys):
    """With repeats the summary counts items by their verdict over attempts, and names the attempts apart."""
    plan["items"] = REPEAT_ITEMS
    with FakeBotServer(repeat_answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run_cli("--repeats", "3", "--wait")
    out = capsys.readouterr().out
    # "sometimes" failed one attempt and "never" every one: 2 failed items, not 4 failed attempts.
    assert "items       : 1 passed, 2 failed, 0 unassessed of 3 (9 attempts)" in out
    assert "attempts    : 5/9 passed" in out
    assert "completed: 9/9 attempts done, 5 passed, 4 failed" in out


def skip_every_rule(rule, transcript):
    return Verdict.skipped("heuristic:v1", "cannot judge")


def test_summary_counts_unassessed_items_apart(plan, monkeypatch, capsys):
    monkeypatch.setattr(heuristic, "judge_rule", skip_every_rule)
    run_cli("--rubric", str(PLAN_RUBRIC), "--wait", "--allow-unassessed")
    out = capsys.readouterr().out
    assert "items       : 0 passed, 2 failed, 4 unassessed of 6" in out
    assert "completed: 6/6 items done, 0 passed, 2 failed, 4 unassessed" in out
