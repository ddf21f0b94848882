"""PostgreSQL: agentic_agentevaluation becomes a table partitioned by RANGE (id), so that retention
returns the disk space of expired evaluations' own rows and indexes by dropping a partition instead
of deleting rows whose space PostgreSQL only reuses. The ranges are those of the evaluations' Score
rows (scores.0003) but wider (EVALSITE_EVALUATION_PARTITION_IDS, 1,000,000 by default, ten of theirs):
apps.scores.partitions registers both and apps.traces.partitions keeps them (made ahead of the id
sequence, dropped by a retention pass once its batches deleted every evaluation of the range).

    agentic_agentevaluation       RANGE (id): _p0, _p1000000, …, _default

The partial unique index agenteval_online_once (trace, judge, fingerprint) cannot stay: a
partitioned table's unique index must hold its partition key. It moves, under the same name, to a
new table agentic_onlineverdict (one row per online verdict, written with it), filled here from the
evaluations it covered. On every database, so that the model is the same everywhere.

The primary key stays (id): it holds the partition key. A partitioned table cannot have an identity
column before PostgreSQL 17, so `id` takes its default from a sequence owned by the column. The rows
are copied (INSERT … SELECT): on a large installation this migration takes the time of one copy of
the evaluations. Other databases: only the constraint moves. Reversible.
"""

import django.db.models.deletion
from django.db import migrations, models

from apps.core.migration_partitions import partitioning, ranges

TABLE = "agentic_agentevaluation"


def verdicts_fill(apps, schema_editor):
    """One OnlineVerdict per evaluation the partial index covered, in one statement."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO agentic_onlineverdict (evaluation_id, trace_id, judge, fingerprint, rule_id) "
            f"SELECT id, trace_id, judge, fingerprint, rule_id FROM {TABLE} "
            "WHERE rule_id IS NOT NULL AND trace_id IS NOT NULL AND NOT has_error"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("agentic", "0012_metric_judge"),
        # Their foreign keys to this table gone first (queue items, metric reviews): a key to a
        # partitioned table has one constraint per partition, which Django's RemoveField and
        # DeleteModel would then try to drop one by one.
        ("queues", "0006_delete_metricreview"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="agentevaluation", name="agenteval_online_once"),
        partitioning(
            TABLE,
            partition_by="RANGE (id)",
            primary_key="(id)",
            partitions=ranges(TABLE, source=TABLE, size_setting="EVALSITE_EVALUATION_PARTITION_IDS"),
        ),
        migrations.CreateModel(
            name="OnlineVerdict",
            fields=[
                (
                    "evaluation",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="agentic.agentevaluation",
                    ),
                ),
                ("trace_id", models.BigIntegerField()),
                ("judge", models.CharField(max_length=255)),
                ("fingerprint", models.CharField(max_length=64)),
                (
                    "rule",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="agentic.evaluationrule"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("trace_id", "judge", "fingerprint"), name="agenteval_online_once")
                ],
            },
        ),
        migrations.RunPython(verdicts_fill, migrations.RunPython.noop),
    ]
