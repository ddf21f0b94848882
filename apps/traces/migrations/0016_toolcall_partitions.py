"""PostgreSQL: traces_toolcall becomes a table partitioned by RANGE (trace_id), so that retention
returns the disk space of expired tool calls by dropping a partition instead of deleting rows whose
space PostgreSQL only reuses (apps.traces.partitions keeps the partitions: created ahead of the
trace id sequence, dropped when every trace in their range has expired).

A partitioned table's primary key and unique constraints must include the partition key, so the
primary key becomes (id, trace_id): `id` still comes from its own sequence and stays unique, and
lookups by id use the key's leading column. The unique constraints already lead with trace_id. A
partitioned table cannot have an identity column before PostgreSQL 17: `id` takes its default from
a sequence owned by the column (what pg_get_serial_sequence, TRUNCATE … RESTART IDENTITY and
Django's sequence reset find). The constraints and indexes keep the names Django gave them.

The rows are copied (INSERT … SELECT) into the new table: on a large installation this migration
takes the time of one copy of the tool calls. Other databases: nothing changes. Reversible.
"""

from django.db import migrations

from apps.core.migration_partitions import partitioning, ranges

TABLE = "traces_toolcall"


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0015_agenttrace_ledger_units"),
    ]

    operations = [
        partitioning(
            TABLE,
            partition_by="RANGE (trace_id)",
            primary_key="(id, trace_id)",
            partitions=ranges(TABLE, source="traces_agenttrace", size_setting="EVALSITE_TOOLCALL_PARTITION_TRACES"),
        )
    ]
