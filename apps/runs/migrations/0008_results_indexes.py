"""Indexes for reading runs of 100,000 results (issue 16, item 7), written as SQL so that
PostgreSQL builds them without blocking the engine's writes (CREATE INDEX CONCURRENTLY, outside a
transaction) and models.py stays as it is until they are moved into EvaluationResult.Meta.

- results_run_done_table (run_id, state, passed, position, id): the run page's table, failed first
  then in test set order; its pages' ids come from an index-only scan however deep the page. On
  PostgreSQL it also carries (INCLUDE) the outcome, item type and item name, so the unassessed, item
  type and name-search filters are answered from the index too.
- results_run_done_order (run_id, state, position, id): the results API's pages in test set order
  (INCLUDE passed and item type, its filters, on PostgreSQL).
- results_run_finished (run_id, finished_at): the live view's rows finished since its cursor, and
  the slices a run in progress adds to its digest.
"""

from django.db import migrations

# name: (columns, PostgreSQL's INCLUDE columns)
INDEXES = {
    "results_run_done_table": ("run_id, state, passed, position, id", "outcome, item_type, item_name"),
    "results_run_done_order": ("run_id, state, position, id", "passed, item_type"),
    "results_run_finished": ("run_id, finished_at", ""),
}
TABLE = "runs_evaluationresult"


def create(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    for name, (columns, include) in INDEXES.items():
        concurrently = "CONCURRENTLY " if postgresql else ""
        covering = f" INCLUDE ({include})" if postgresql and include else ""
        schema_editor.execute(f"CREATE INDEX {concurrently}IF NOT EXISTS {name} ON {TABLE} ({columns}){covering}")


def drop(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY cannot run inside a transaction.
    atomic = False

    dependencies = [
        ("runs", "0007_repeats"),
    ]

    operations = [migrations.RunPython(create, drop, atomic=False)]
