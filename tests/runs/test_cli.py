import pytest
from django.core.management import CommandError, call_command

from .conftest import AGENT, RUBRIC_ID, TEST_SET

pytestmark = pytest.mark.django_db(transaction=True)


def run_cli(*extra):
    args = ["evalrun", "--agent", AGENT, "--test-set", str(TEST_SET), "--judge-model", "heuristic", "--poll", "0.01",
            "--timeout", "30",
            *extra]
    return call_command(*args)


def test_wait_prints_progress_and_summary(plan, capsys):
    run_cli("--rubric", str(RUBRIC_ID), "--wait", "--concurrency", "4")
    out = capsys.readouterr().out
    assert "completed: 6/6 done, 4 passed, 2 failed" in out
    assert "pass rate   : 4/6 = 66.7%" in out and "rubric rules:" in out and "FAILED item 2" in out


def test_fail_under_exits_non_zero(plan):
    with pytest.raises(CommandError, match="below 90.0%"):
        run_cli("--wait", "--fail-under", "0.9")
    run_cli("--wait", "--fail-under", "0.5")


def test_unknown_agent_is_a_clear_error(plan):
    with pytest.raises(CommandError, match="No bot"):
        call_command("evalrun", "--agent", "c" * 24, "--test-set", str(TEST_SET))
