"""A trigram (pg_trgm) GIN index on UPPER(session_id), so the console's trace search finds a session
by any part of its id without reading every trace. UPPER() because Django's icontains compares
UPPER(session_id::text) on PostgreSQL, and a trigram index serves only the expression it was built on.

PostgreSQL only, like migration 0004's index on the query text: on SQLite (and on a PostgreSQL where
pg_trgm cannot be created) nothing is made and the console searches session ids by their beginning
at any depth and by any part within a window of the newest traces (apps.console.selectors). The index
is built CONCURRENTLY so that trace ingestion is not blocked while a large table is indexed; it is not
declared in AgentTrace.Meta, which would make SQLite try to build a GIN index.
"""

from django.contrib.postgres.operations import TrigramExtension
from django.db import DatabaseError, migrations

SESSION_TRGM_INDEX = "agenttrace_session_trgm"  # apps.traces.models.TRACE_SESSION_TRGM_INDEX


class TrigramExtensionIfPermitted(TrigramExtension):
    """CREATE EXTENSION IF NOT EXISTS pg_trgm (a no-op on other databases). pg_trgm is trusted since
    PostgreSQL 13, so the database owner may create it; where it cannot, the bounded search applies."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        try:
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        except DatabaseError:
            pass

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        pass  # migration 0004's index on the query text may still need it


def has_trigram_extension(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        return cursor.fetchone() is not None


def add_session_trigram_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or not has_trigram_extension(connection):
        return
    # SQL rather than GinIndex(OpClass(Upper("session_id"), name="gin_trgm_ops")): without
    # django.contrib.postgres installed, Django wraps the operator class in the expression's parentheses.
    table = apps.get_model("traces", "AgentTrace")._meta.db_table
    schema_editor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SESSION_TRGM_INDEX} ON {table} "
                          "USING gin ((UPPER(session_id)) gin_trgm_ops)")


def drop_session_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SESSION_TRGM_INDEX}")


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY cannot run inside a transaction.
    atomic = False

    dependencies = [
        ("traces", "0004_trace_list"),
    ]

    operations = [
        TrigramExtensionIfPermitted(),
        migrations.RunPython(add_session_trigram_index, drop_session_trigram_index, atomic=False, elidable=False),
    ]
