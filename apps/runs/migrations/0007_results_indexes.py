"""Indexes for reading runs of 100,000 results (issue 16, item 7), written as SQL so that
PostgreSQL builds them without blocking the engine's writes (CREATE INDEX CONCURRENTLY, outside a
transaction) and models.py stays as it is until they are moved into EvaluationResult.Meta.

- results_run_done_table (run_id, state, passed, position, id): the run page's table, failed first
  then in test set order; its pages' ids come from an index-only scan however deep the page.
- results_run_done_order (run_id, state, position, id): the results API's pages in test set order.
- results_run_finished (run_id, finished_at): the live view's rows finished since its cursor, the
  cursor itself, and the slices a run in progress adds to its digest.
"""

from django.db import migrations

INDEXES = {
    "results_run_done_table": "(run_id, state, passed, position, id)",
    "results_run_done_order": "(run_id, state, position, id)",
    "results_run_finished": "(run_id, finished_at)",
}
TABLE = "runs_evaluationresult"


def create(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    for name, columns in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX {concurrently}IF NOT EXISTS {name} ON {TABLE} {columns}")


def drop(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY cannot run inside a transaction.
    atomic = False

    dependencies = [
        ("runs", "0006_result_outcome_run_coverage"),
    ]

    operations = [migrations.RunPython(create, drop, atomic=False)]
