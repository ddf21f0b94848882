"""PostgreSQL: rag_traceevaluation becomes a table partitioned by RANGE (id), so that retention
returns the disk space of expired RAG evaluations' own rows by dropping a partition, as
agentic.0013 does for agentic evaluations (EVALSITE_EVALUATION_PARTITION_IDS ids each), registered
by apps.scores.partitions and kept by apps.traces.partitions.

    rag_traceevaluation           RANGE (id): _p0, _p100000, …, _default

The table has no unique constraint besides its primary key (id), which holds the partition key, and
nothing references it. A partitioned table cannot have an identity column before PostgreSQL 17, so
`id` takes its default from a sequence owned by the column. The rows are copied (INSERT … SELECT).
Other databases: nothing changes. Reversible.
"""

from django.conf import settings
from django.db import migrations

from apps.core.migration_partitions import highest_id, range_partitions, table_rebuild

TABLE = "rag_traceevaluation"


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        top, size = highest_id(cursor, TABLE), settings.EVALSITE_EVALUATION_PARTITION_IDS
        table_rebuild(
            cursor,
            TABLE,
            partition_by="RANGE (id)",
            primary_key="(id)",
            partitions=lambda new: range_partitions(cursor, new, name=TABLE, top=top, size=size),
        )


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        table_rebuild(cursor, TABLE, partition_by=None, primary_key="(id)")


class Migration(migrations.Migration):
    dependencies = [
        ("rag", "0007_retention_index"),
        # Their foreign keys to this table gone first (queue items, metric reviews): a key to a
        # partitioned table has one constraint per partition, which Django's RemoveField and
        # DeleteModel would then try to drop one by one.
        ("queues", "0006_delete_metricreview"),
    ]

    operations = [migrations.RunPython(partition, unpartition)]
