"""PostgreSQL: scores_score becomes a table partitioned by LIST (subject_kind), and the Score rows
of agentic and RAG evaluations are partitioned again by RANGE (subject_id), so that retention
returns the disk space of expired evaluations' verdicts by dropping a partition instead of deleting
rows whose space PostgreSQL only reuses (apps.scores.partitions; apps.traces.partitions keeps them:
created ahead of the evaluation id sequence, dropped by a retention pass once its batches have
deleted every evaluation of their range). The Score rows of run results and traces stay in one DEFAULT partition, deleted with
their subjects as before.

    scores_score                  LIST (subject_kind)
      scores_score_agentic          'agentic_evaluation', RANGE (subject_id): _p0, _p100000, …, _default
      scores_score_rag              'rag_evaluation', RANGE (subject_id): the same
      scores_score_other            DEFAULT (run_result, trace)

A partitioned table's primary key must include its partition keys, so the primary key becomes
(id, subject_kind, subject_id): `id` still comes from its own sequence and stays unique, and
lookups by id use the key's leading column. A partitioned table cannot have an identity column
before PostgreSQL 17: `id` takes its default from a sequence owned by the column (what
pg_get_serial_sequence, TRUNCATE … RESTART IDENTITY and Django's sequence reset find). The
constraints and indexes keep the names Django gave them.

The rows are copied (INSERT … SELECT) into the new table: on a large installation this migration
takes the time of one copy of the Score rows. Other databases: nothing changes. Reversible.
"""

from django.db import migrations

from apps.core.migration_partitions import partitioning, ranges

TABLE = "scores_score"
# (subject kind, partition, the table whose ids its rows' subject_id holds), as apps.scores.partitions.
RANGED = (
    ("agentic_evaluation", f"{TABLE}_agentic", "agentic_agentevaluation"),
    ("rag_evaluation", f"{TABLE}_rag", "rag_traceevaluation"),
)


def _partitions(cursor, new):
    for kind, name, source in RANGED:
        cursor.execute(f"CREATE TABLE {name} PARTITION OF {new} FOR VALUES IN ('{kind}') PARTITION BY RANGE (subject_id)")
        ranges(name, source=source, size_setting="EVALSITE_SCORE_PARTITION_SUBJECTS")(cursor, name)
    cursor.execute(f"CREATE TABLE {TABLE}_other PARTITION OF {new} DEFAULT")


class Migration(migrations.Migration):
    dependencies = [
        ("scores", "0002_score_parent_key_cover"),
    ]

    operations = [
        partitioning(
            TABLE, partition_by="LIST (subject_kind)", primary_key="(id, subject_kind, subject_id)", partitions=_partitions
        )
    ]
