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

from django.conf import settings
from django.db import migrations

from apps.core.migration_partitions import highest_id, range_partitions, table_rebuild

TABLE = "traces_toolcall"


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        top, size = highest_id(cursor, "traces_agenttrace"), settings.EVALSITE_TOOLCALL_PARTITION_TRACES
        table_rebuild(
            cursor,
            TABLE,
            partition_by="RANGE (trace_id)",
            primary_key="(id, trace_id)",
            partitions=lambda new: range_partitions(cursor, new, name=TABLE, top=top, size=size),
        )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        table_rebuild(cursor, TABLE, partition_by=None, primary_key="(id)")


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0015_agenttrace_ledger_units"),
    ]

    operations = [migrations.RunPython(forward, backward)]
