"""OpenTelemetry trace and span ids become unique per project, like session ids: they are chosen by
the client, and a global key told project B that project A holds a trace id (B's spans were refused
as `conflict`) and made the second project of a trace that crossed two teams' services lose its
spans.

- AgentTrace: the unique constraint on otel_trace_id becomes (otel_trace_id, project): the trace id
  leads, so every lookup by trace ids uses the index whatever the planner thinks of the project.
- OtlpSpan: gains `project` (the project whose export stored the span) and its primary key becomes
  (project, otel_trace_id, span_id). Django cannot alter a composite primary key, so the state
  changes in one step and the table in two: the column is added and filled (nullable), then
  PostgreSQL swaps the key in place and SQLite rebuilds the table. No foreign key constraint in the
  database (see the model: a check per inserted span).

An existing span's project: the one in its payload (a span waiting for its root carried the id of
the project that sent it; that project is its owner even when another project holds a trace of the
same id, whose root never claimed it), else the project of the trace with its trace id (the spans
applied to a trace), else `default` (what is left: span ids of no trace, from before projects). The
payload loses that key: the column says it now.

Reversible while no two projects hold the same trace id or the same span ids: going back refuses,
naming one, rather than merging two projects' rows.
"""

from django.db import migrations, models

import apps.core.models

SPANS = "traces_otlpspan"
TRACES = "traces_agenttrace"
PROJECTS = "core_project"
PROJECT_KEY = "project"  # the payload key the spans' project was kept in before this migration


def _default_project_id(apps) -> int:
    Project = apps.get_model("core", "Project")
    project, _ = Project.objects.get_or_create(slug="default", defaults={"name": "Default"})
    return project.pk


def _constraint(cursor, kind: str) -> str | None:
    cursor.execute(f"SELECT conname FROM pg_constraint WHERE conrelid = '{SPANS}'::regclass AND contype = %s", [kind])
    row = cursor.fetchone()
    return row[0] if row else None


def add_and_fill(apps, schema_editor):
    """The column, nullable, filled for every existing span."""
    default = _default_project_id(apps)
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        sender = f"(SELECT p.id FROM {PROJECTS} p WHERE p.id::text = s.payload->>'{PROJECT_KEY}')"
        stripped = f"CASE WHEN s.payload ? '{PROJECT_KEY}' THEN s.payload - '{PROJECT_KEY}' ELSE s.payload END"
    else:
        sender = f"(SELECT p.id FROM {PROJECTS} p WHERE p.id = json_extract(s.payload, '$.{PROJECT_KEY}'))"
        stripped = (
            f"CASE WHEN json_extract(s.payload, '$.{PROJECT_KEY}') IS NOT NULL "
            f"THEN json_remove(s.payload, '$.{PROJECT_KEY}') ELSE s.payload END"
        )
    owner = f"(SELECT t.project_id FROM {TRACES} t WHERE t.otel_trace_id = s.otel_trace_id ORDER BY t.id LIMIT 1)"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {SPANS} ADD COLUMN project_id bigint NULL")
        cursor.execute(
            f"UPDATE {SPANS} AS s SET project_id = coalesce({sender}, {owner}, %s), payload = {stripped}", [default]
        )


def restore_old_shape(apps, schema_editor):
    """Backwards: the key (otel_trace_id, span_id) again, the project back in waiting payloads, the
    column gone. `refuse_shared_ids` ran first: the ids are unique across projects."""
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {SPANS} SET payload = payload || jsonb_build_object('{PROJECT_KEY}', project_id) "
                "WHERE payload IS NOT NULL"
            )
            cursor.execute(f"ALTER TABLE {SPANS} DROP CONSTRAINT {_constraint(cursor, 'p')}")
            cursor.execute(f"ALTER TABLE {SPANS} ADD CONSTRAINT {SPANS}_pkey PRIMARY KEY (otel_trace_id, span_id)")
            cursor.execute(f"ALTER TABLE {SPANS} DROP COLUMN project_id")
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {SPANS} SET payload = json_set(payload, '$.{PROJECT_KEY}', project_id) WHERE payload IS NOT NULL"
        )
    # `apps` is the state before this migration: the table is rebuilt in the old shape, without the
    # column (SQLite cannot drop a primary key in place).
    schema_editor._remake_table(apps.get_model("traces", "OtlpSpan"))


def swap_key(apps, schema_editor):
    """The column required and the primary key (project, otel_trace_id, span_id)."""
    if schema_editor.connection.vendor != "postgresql":
        # `apps` is the new state: the table is rebuilt with its key and column.
        schema_editor._remake_table(apps.get_model("traces", "OtlpSpan"))
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {SPANS} ALTER COLUMN project_id SET NOT NULL")
        cursor.execute(f"ALTER TABLE {SPANS} DROP CONSTRAINT {_constraint(cursor, 'p')}")
        cursor.execute(
            f"ALTER TABLE {SPANS} ADD CONSTRAINT {SPANS}_pkey PRIMARY KEY (project_id, otel_trace_id, span_id)"
        )


def refuse_shared_ids(apps, schema_editor):
    """Backwards, before anything changes: the old global keys cannot hold two projects' ids."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"SELECT otel_trace_id FROM {TRACES} WHERE otel_trace_id IS NOT NULL "
            "GROUP BY otel_trace_id HAVING count(*) > 1 LIMIT 1"
        )
        shared = cursor.fetchone()
        if shared is None:
            cursor.execute(
                f"SELECT otel_trace_id FROM {SPANS} GROUP BY otel_trace_id, span_id HAVING count(*) > 1 LIMIT 1"
            )
            shared = cursor.fetchone()
    if shared is not None:
        raise RuntimeError(
            f"traces.0017 cannot be reversed: OpenTelemetry trace id {shared[0]} is held by more than one "
            "project, and before 0017 a trace id (and a span id) was unique across projects. Delete one "
            "project's traces of that id (or its span ids) first."
        )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0008_apikey_review_scope"),
        ("traces", "0016_toolcall_partitions"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="agenttrace", name="agenttrace_unique_otel_trace_id"),
        migrations.AddConstraint(
            model_name="agenttrace",
            constraint=models.UniqueConstraint(
                fields=("otel_trace_id", "project"), name="agenttrace_unique_otel_trace_id_project"
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="otlpspan",
                    name="project",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        default=apps.core.models.default_project_id,
                        on_delete=models.deletion.CASCADE,
                        related_name="+",
                        to="core.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="otlpspan",
                    name="pk",
                    field=models.CompositePrimaryKey(
                        "project",
                        "otel_trace_id",
                        "span_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
            ],
            # Runs with the state before this migration, both ways.
            database_operations=[migrations.RunPython(add_and_fill, restore_old_shape)],
        ),
        # Runs with the new state; backwards, restore_old_shape undoes it.
        migrations.RunPython(swap_key, migrations.RunPython.noop),
        # Last, so that backwards it runs first, before anything is changed.
        migrations.RunPython(migrations.RunPython.noop, refuse_shared_ids),
    ]
