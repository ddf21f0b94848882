"""Migrations traces.0013/0014: the entries written while the ledger was global cannot be split by
project, so they become `default`'s (as every row from before projects did), with their counts and
reasons unchanged, and new entries need a project."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.core.models import Project
from apps.traces.ledger_selectors import ingestion_ledger
from apps.traces.models import IngestionEntry

BEFORE = [("traces", "0012_retention_index")]


# transaction=True: migrating back and forth alters the table, which SQLite's schema editor refuses
# inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_global_entries_become_defaults():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    at = datetime(2026, 3, 1, 10, tzinfo=UTC)
    try:
        Entry = executor.loader.project_state(BEFORE).apps.get_model("traces", "IngestionEntry")
        Entry.objects.create(source="otlp", received=5, stored=3, dropped=2, reasons={"dropped": {"orphan": 2}}, at=at)
        Entry.objects.create(source="rest", received=1, stored=1, at=at)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    default = Project.objects.get(slug="default")
    assert set(IngestionEntry.objects.values_list("project_id", flat=True)) == {default.pk}
    otlp = ingestion_ledger(project=default, since=at, until=datetime(2026, 3, 2, tzinfo=UTC))["otlp"]
    assert (otlp.received, otlp.stored, otlp.dropped, otlp.balanced) == (5, 3, {"orphan": 2}, True)
    assert IngestionEntry._meta.get_field("project").null is False
