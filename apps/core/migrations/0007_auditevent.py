# The audit trail (apps.core.audit): the table, and triggers that refuse to change or delete its
# rows whoever asks, the app's own ORM included (its QuerySet and save() refuse too).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Deleting a project, a user or a key sets the event's reference to it to NULL (on_delete SET_NULL,
# with the text copies project_slug and actor kept): the one UPDATE allowed.
_KEPT = ("id", "project_slug", "actor", "action", "object_type", "object_id", "object_repr", "changes", "created_at")
_NULLED = ("project_id", "actor_user_id", "actor_key_id")

POSTGRES_FORWARD = [
    f"""
CREATE OR REPLACE FUNCTION core_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE'
        AND {" AND ".join(f"NEW.{c} IS NOT DISTINCT FROM OLD.{c}" for c in _KEPT)}
        AND {" AND ".join(f"(NEW.{c} IS NOT DISTINCT FROM OLD.{c} OR NEW.{c} IS NULL)" for c in _NULLED)}
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: % of core_auditevent refused', TG_OP;
END;
$$ LANGUAGE plpgsql""",
    """CREATE TRIGGER core_auditevent_append_only BEFORE UPDATE OR DELETE ON core_auditevent
    FOR EACH ROW EXECUTE FUNCTION core_auditevent_append_only()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS core_auditevent_append_only ON core_auditevent",
    "DROP FUNCTION IF EXISTS core_auditevent_append_only()",
]
# SQLite refuses updates only: Django's flush (test isolation, `manage.py flush`) empties SQLite
# tables with DELETE, which a row trigger would stop, where PostgreSQL's flush is a TRUNCATE that
# row triggers do not see. Note that SQLite rebuilds a table (dropping its triggers) for most
# ALTERs: a later migration of this table must create this trigger again.
SQLITE_FORWARD = [
    f"""
CREATE TRIGGER core_auditevent_no_update BEFORE UPDATE ON core_auditevent
WHEN NOT ({" AND ".join(f"NEW.{c} IS OLD.{c}" for c in _KEPT)}
    AND {" AND ".join(f"(NEW.{c} IS OLD.{c} OR NEW.{c} IS NULL)" for c in _NULLED)})
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only: UPDATE of core_auditevent refused');
END"""
]
SQLITE_REVERSE = ["DROP TRIGGER IF EXISTS core_auditevent_no_update"]


def _run(schema_editor, sql_by_vendor: dict[str, list[str]]) -> None:
    with schema_editor.connection.cursor() as cursor:
        for statement in sql_by_vendor.get(schema_editor.connection.vendor, []):
            # Without parameters, so the % of RAISE EXCEPTION is not taken for a placeholder.
            cursor.execute(statement)


def triggers_create(apps, schema_editor):
    _run(schema_editor, {"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD})


def triggers_drop(apps, schema_editor):
    _run(schema_editor, {"postgresql": POSTGRES_REVERSE, "sqlite": SQLITE_REVERSE})


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0006_single_sign_on'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('project_slug', models.CharField(blank=True, default='', max_length=50)),
                ('actor', models.CharField(max_length=200)),
                ('action', models.CharField(max_length=32)),
                ('object_type', models.CharField(max_length=64)),
                ('object_id', models.CharField(blank=True, default='', max_length=255)),
                ('object_repr', models.CharField(blank=True, default='', max_length=255)),
                ('changes', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('actor_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='core.apikey')),
                ('actor_user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='core.project')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['project', '-created_at'], name='auditevent_project_newest'), models.Index(fields=['object_type', 'object_id'], name='auditevent_object')],
            },
        ),
        migrations.RunPython(triggers_create, triggers_drop),
    ]
