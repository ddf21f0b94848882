"""Issue 16, fail-closed coverage: /summary shows, per metric, the denominators of its average
(evaluations scored, skipped and errored), from the running totals and from a rebuild alike."""

import pytest

from apps.agentic.models import AgentEvaluation, EvaluationRollup
from apps.agentic.services import _rollup_add
from tests.agentic.factories import AgentEvaluationFactory

pytestmark = pytest.mark.django_db

BASE = "/api/v1/metrics"


def _mixed():
    AgentEvaluationFactory()
    AgentEvaluationFactory(tool_call_accuracy=None, tool_call_accuracy_status="skipped")
    AgentEvaluationFactory(
        tool_call_accuracy=None,
        tool_call_accuracy_status="skipped",
        intent_resolution=None,
        intent_resolution_status="error",
    )


def test_summary_reports_scored_skipped_and_errored_per_metric(api):
    assert api.get(f"{BASE}/summary").json()["coverage"] == {
        name: {"scored": 0, "skipped": 0, "errored": 0}
        for name in ("task_adherence", "tool_call_accuracy", "intent_resolution")
    }
    _mixed()
    body = api.get(f"{BASE}/summary").json()
    assert body["coverage"] == {
        "task_adherence": {"scored": 3, "skipped": 0, "errored": 0},
        "tool_call_accuracy": {"scored": 1, "skipped": 2, "errored": 0},
        "intent_resolution": {"scored": 2, "skipped": 0, "errored": 1},
    }
    # The averages keep their meaning: over the scored evaluations only, now shown beside their n.
    assert body["average_scores"]["tool_call_accuracy"] == 1.0 and body["total_evaluations"] == 3


def test_running_totals_count_statuses_as_a_rebuild_does(db):
    _mixed()
    rebuilt = list(EvaluationRollup.objects.order_by("pk").values())
    EvaluationRollup.objects.all().delete()
    _rollup_add(list(AgentEvaluation.objects.all()))
    added = list(EvaluationRollup.objects.order_by("pk").values())

    def strip(rows):
        return sorted(
            ({k: v for k, v in r.items() if k != "id"} for r in rows),
            key=lambda r: (r["agent_name"], r["operation"], r["rating"]),
        )

    assert strip(added) == strip(rebuilt)
    assert sum(r["tool_call_accuracy_skipped"] for r in added) == 2
    assert sum(r["intent_resolution_errored"] for r in added) == 1


# transaction=True: migrating back and forth alters the rollup table, which SQLite's schema editor
# refuses to do inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_status_counts_of_existing_rollups():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("agentic", "0003_judge_fingerprint")], [("agentic", "0004_rollup_metric_coverage")]
    _mixed()  # rows and their rollups, as they stood; the migration recounts the new columns
    expected = sorted(
        EvaluationRollup.objects.values_list(
            "agent_name", "operation", "rating", "tool_call_accuracy_skipped", "intent_resolution_errored"
        )
    )
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        assert (
            sorted(
                EvaluationRollup.objects.values_list(
                    "agent_name", "operation", "rating", "tool_call_accuracy_skipped", "intent_resolution_errored"
                )
            )
            == expected
        )
    finally:
        # The tests after this one need the schema the current models have.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert sum(row[3] for row in expected) == 2
