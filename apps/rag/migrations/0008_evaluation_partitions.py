"""PostgreSQL: rag_traceevaluation becomes a table partitioned by RANGE (id), so that retention
returns the disk space of expired RAG evaluations' own rows by dropping a partition, as
agentic.0013 does for agentic evaluations (EVALSITE_EVALUATION_PARTITION_IDS ids each), registered
by apps.scores.partitions and kept by apps.traces.partitions.

    rag_traceevaluation           RANGE (id): _p0, _p1000000, …, _default

The table has no unique constraint besides its primary key (id), which holds the partition key, and
nothing references it. A partitioned table cannot have an identity column before PostgreSQL 17, so
`id` takes its default from a sequence owned by the column. The rows are copied (INSERT … SELECT).
Other databases: nothing changes. Reversible.
"""

from django.db import migrations

from apps.core.migration_partitions import partitioning, ranges

TABLE = "rag_traceevaluation"


class Migration(migrations.Migration):
    dependencies = [
        ("rag", "0007_retention_index"),
        # Their foreign keys to this table gone first (queue items, metric reviews): a key to a
        # partitioned table has one constraint per partition, which Django's RemoveField and
        # DeleteModel would then try to drop one by one.
        ("queues", "0006_delete_metricreview"),
    ]

    operations = [
        partitioning(
            TABLE,
            partition_by="RANGE (id)",
            primary_key="(id)",
            partitions=ranges(TABLE, source=TABLE, size_setting="EVALSITE_EVALUATION_PARTITION_IDS"),
        )
    ]
