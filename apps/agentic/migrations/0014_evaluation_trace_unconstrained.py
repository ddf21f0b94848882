"""The evaluations' foreign key to their trace loses its database constraint, so that traces can be
partitioned and their partitions dropped (traces.0021): PostgreSQL refuses to drop a partition that
a constraint references. Every path that deletes traces unlinks their evaluations (the ORM's
SET_NULL; retention's references_unlink). Reversible."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agentic", "0013_evaluation_partitions"),
        ("traces", "0020_trace_keys"),
    ]

    operations = [
        migrations.AlterField(
            model_name="agentevaluation",
            name="trace",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="evaluations",
                to="traces.agenttrace",
            ),
        ),
    ]
