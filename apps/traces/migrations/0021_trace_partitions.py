"""PostgreSQL: traces_agenttrace becomes a table partitioned by RANGE (id), so that retention returns
the disk space of expired traces' own rows and indexes by dropping a partition instead of deleting
rows whose space PostgreSQL only reuses (their tool calls' partitions already go, traces.0016).
apps.traces.partitions keeps them: made ahead of the id sequence, dropped by a retention pass once
its batches deleted every trace of the range.

    traces_agenttrace       RANGE (id): _p0, _p1000000, …, _default (EVALSITE_TRACE_PARTITION_IDS)

What stood in the way went in the migrations before: the unique keys moved to traces_tracekey, kept
by triggers (traces.0020), and the tool calls' and evaluations' foreign keys lost their database
constraints (traces.0020, agentic.0014). The rebuild drops the table's triggers: they are made again
on the new table, both ways.

The primary key stays (id): it holds the partition key. A partitioned table cannot have an identity
column before PostgreSQL 17, so `id` takes its default from a sequence owned by the column. The rows
are copied (INSERT … SELECT): on a large installation this migration takes the time of one copy of
the traces. Other databases: nothing changes. Reversible.
"""

from django.db import migrations

from apps.core.migration_partitions import partitioning, ranges
from apps.traces import trace_keys

TABLE = "traces_agenttrace"


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0020_trace_keys"),
        ("agentic", "0014_evaluation_trace_unconstrained"),
    ]

    operations = [
        partitioning(
            TABLE,
            partition_by="RANGE (id)",
            primary_key="(id)",
            partitions=ranges(TABLE, source=TABLE, size_setting="EVALSITE_TRACE_PARTITION_IDS"),
            triggers=lambda cursor: trace_keys.triggers_create(cursor, "postgresql"),
        )
    ]
