"""The traces' unique keys move to their own table, traces_tracekey (TraceKey), kept by triggers on
traces_agenttrace (apps.traces.trace_keys), so that the next migration can partition the traces by id
(a partitioned table keeps a unique index only if it holds the partition key). On every database, so
that the model is the same everywhere:

- the constraints agenttrace_unique_project_session and agenttrace_unique_otel_trace_id_project go
  from AgentTrace to TraceKey under the same names, and plain indexes of the same columns stay on the
  traces for the lookups (agenttrace_project_session, agenttrace_otel_trace_id);
- one key row per stored trace is written here, then the triggers keep them;
- the tool calls' foreign key to their trace loses its database constraint (a partition of traces
  could not be dropped while one referenced it; the agentic evaluations' goes in agentic.0014).

Reversible.
"""

import django.db.models.deletion
from django.db import migrations, models

from apps.traces import trace_keys


def keys_make(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        trace_keys.keys_fill(cursor)
        trace_keys.triggers_create(cursor, schema_editor.connection.vendor)


def keys_unmake(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        trace_keys.triggers_drop(cursor, schema_editor.connection.vendor)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0010_modelprice_defaults"),
        ("traces", "0019_trace_cost_backfill"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="agenttrace", name="agenttrace_unique_project_session"),
        migrations.RemoveConstraint(model_name="agenttrace", name="agenttrace_unique_otel_trace_id_project"),
        migrations.AddIndex(
            model_name="agenttrace",
            index=models.Index(fields=["project", "session_id"], name="agenttrace_project_session"),
        ),
        migrations.AddIndex(
            model_name="agenttrace",
            index=models.Index(fields=["otel_trace_id", "project"], name="agenttrace_otel_trace_id"),
        ),
        migrations.CreateModel(
            name="TraceKey",
            fields=[
                (
                    "trace",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="traces.agenttrace",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="core.project",
                    ),
                ),
                ("session_id", models.CharField(max_length=255)),
                ("otel_trace_id", models.CharField(blank=True, max_length=32, null=True)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "session_id"), name="agenttrace_unique_project_session"
                    ),
                    models.UniqueConstraint(
                        fields=("otel_trace_id", "project"), name="agenttrace_unique_otel_trace_id_project"
                    ),
                ],
            },
        ),
        migrations.AlterField(
            model_name="toolcall",
            name="trace",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tool_calls",
                to="traces.agenttrace",
            ),
        ),
        # Last: on SQLite the constraint removals above remake traces_agenttrace, dropping triggers.
        migrations.RunPython(keys_make, keys_unmake),
    ]
