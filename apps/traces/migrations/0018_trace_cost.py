"""A trace keeps what its model calls cost (AgentTrace.cost, unpriced_calls), and each project its
traces' spend per day (TraceSpendDay). Both columns are nullable or have a database default: adding them
rewrites no row on PostgreSQL, and bulk writers that COPY traces without them keep working. The
traces stored before are priced by 0019."""


import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0010_modelprice_defaults"),
        ("traces", "0017_otlp_ids_per_project"),
    ]

    operations = [
        migrations.AddField(
            model_name="agenttrace",
            name="cost",
            field=models.DecimalField(blank=True, decimal_places=9, editable=False, max_digits=18, null=True),
        ),
        migrations.AddField(
            model_name="agenttrace",
            name="unpriced_calls",
            field=models.PositiveIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.CreateModel(
            name="TraceSpendDay",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("amount", models.DecimalField(blank=True, decimal_places=9, max_digits=18, null=True)),
                ("unpriced_calls", models.PositiveIntegerField(default=0)),
                (
                    "project",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="core.project"),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("project", "day"), name="tracespendday_project_day")],
            },
        ),
    ]
