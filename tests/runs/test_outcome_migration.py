"""Migration 0006 fills each stored result's outcome from its verdicts and recounts its run, and
0007 gives finished runs their item-level figures (issue 16). The test migrates forward to the
latest migration, so that the current models can read the rows."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.runs import selectors
from apps.runs.models import EvaluationResult, EvaluationRun
from tests.runs.factories import rule as stored_rule

BEFORE = [("runs", "0005_alter_evaluationrun_agent_id")]
OK = {"criterion": "c", "passed": True, "score": 1.0, "reasoning": "", "status": "ok", "judge": "h", "kind": None}


# transaction=True: migrating back and forth alters the runs tables, which SQLite's schema editor
# refuses to do inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_outcomes_and_run_counters():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        apps = executor.loader.project_state(BEFORE).apps
        Run, Result = apps.get_model("runs", "EvaluationRun"), apps.get_model("runs", "EvaluationResult")
        # As stored before issue 16: a skipped high rule passed the item, an errored one failed it.
        run = Run.objects.create(agent_id="b" * 24, status="completed", total=5, completed=5, passed=3, failed=2)
        rows = {
            "green": ([OK], [stored_rule("R1", True, severity="high")], True),
            "skipped high": ([OK], [stored_rule("R1", None, severity="high", status="skipped")], True),
            "errored high": ([OK], [stored_rule("R1", None, severity="high", status="error")], False),
            "failed and skipped": (
                [OK],
                [stored_rule("R1", False, severity="high"), stored_rule("R2", None, severity="high", status="skipped")],
                False,
            ),
            "v1": (None, None, True),
        }
        for position, (name, (criteria, rules, passed)) in enumerate(rows.items()):
            Result.objects.create(
                run=run,
                position=position,
                test_case_id=f"00000000-0000-0000-0000-00000000000{position}",
                item_name=name,
                item_type="single_turn",
                state="done",
                criteria_scores=criteria,
                rubric_scores=rules,
                passed=passed,
            )
        Result.objects.create(
            run=run,
            position=9,
            test_case_id="00000000-0000-0000-0000-000000000009",
            item_name="pending",
            item_type="single_turn",
            state="pending",
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    outcomes = {r.item_name: (r.outcome, r.passed) for r in EvaluationResult.objects.all()}
    assert outcomes == {
        "green": ("passed", True),
        "skipped high": ("unassessed", False),
        "errored high": ("unassessed", False),
        "failed and skipped": ("failed", False),
        "v1": ("passed", True),
        "pending": (None, None),
    }
    run = EvaluationRun.objects.get()
    assert (run.passed, run.failed, run.unassessed, run.completed) == (2, 1, 2, 5)
    assert run.coverage == {"scored": 6, "skipped": 2, "errored": 1}
    # One attempt per item before repeats: pass^k = pass@k = the passed items, nothing flaky.
    assert (
        run.repeats,
        selectors.run_trial_figures(run=run)["items_judged"],
        run.items_passed_all,
        run.items_passed_any,
        run.flaky_items,
    ) == (1, 5, 2, 2, 0)
    assert {r.attempt for r in EvaluationResult.objects.all()} == {1}
