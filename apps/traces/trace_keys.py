"""The triggers that keep TraceKey (traces_tracekey) in step with AgentTrace: one key row per trace,
written by the statement that inserts the trace, changed with it, deleted with it.

The two client-chosen ids of a trace (its session id and its OpenTelemetry trace id) are unique per
project. On PostgreSQL the traces are partitioned by id (traces.0021) so that retention returns
their disk space, and a partitioned table keeps a unique index only if it holds the partition key:
the unique constraints live on TraceKey, and the database itself keeps its rows, so every writer
(the ingestion doors' COPY and INSERT, the ORM, a script's SQL) is held to them exactly as it was by
constraints on the traces, in the same statement: a taken session id raises IntegrityError and the
statement stores nothing.

The SQL is given per database, made by the migrations (traces.0020 makes them, traces.0021 makes
them again after it rebuilds the table, which drops a table's triggers). PostgreSQL: statement-level
triggers with transition tables for INSERT and DELETE (one INSERT … SELECT per COPY of thousands of
traces instead of one call per row), a row-level one for the rare UPDATE of a key column (a column
list cannot have transition tables), and one that empties the keys when the traces are TRUNCATEd
(which fires no DELETE trigger: scripts and benches empty the traces so). SQLite: row-level
triggers. A migration that makes SQLite remake traces_agenttrace (most AlterField on AgentTrace)
drops its triggers too and must call `triggers_create` after it.
"""

TRACES = "traces_agenttrace"
KEYS = "traces_tracekey"
_KEY_COLUMNS = ("project_id", "session_id", "otel_trace_id")
# A key row's columns, and the same read from a trace row (its id is the key row's trace_id).
_COLUMNS = ", ".join(("trace_id", *_KEY_COLUMNS))
_FROM_TRACE = ("id", *_KEY_COLUMNS)
_SOURCE = ", ".join(_FROM_TRACE)
_NEW = ", ".join(f"NEW.{c}" for c in _FROM_TRACE)
_CHANGED = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in _KEY_COLUMNS)
_SET = ", ".join(f"{c} = NEW.{c}" for c in _KEY_COLUMNS)

_POSTGRESQL = [
    f"""CREATE FUNCTION tracekey_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {KEYS} ({_COLUMNS}) SELECT {_SOURCE} FROM new_rows;
    RETURN NULL;
END $$""",
    f"""CREATE FUNCTION tracekey_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {KEYS} k USING old_rows o WHERE k.trace_id = o.id;
    RETURN NULL;
END $$""",
    f"""CREATE FUNCTION tracekey_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {KEYS} SET {_SET} WHERE trace_id = NEW.id;
    RETURN NULL;
END $$""",
    f"""CREATE FUNCTION tracekey_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- DELETE, not TRUNCATE: a TRUNCATE that names both tables (Django's flush) still holds the keys.
    DELETE FROM {KEYS};
    RETURN NULL;
END $$""",
    f"CREATE TRIGGER tracekey_insert AFTER INSERT ON {TRACES} REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION tracekey_insert()",
    f"CREATE TRIGGER tracekey_delete AFTER DELETE ON {TRACES} REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION tracekey_delete()",
    f"CREATE TRIGGER tracekey_update AFTER UPDATE OF {', '.join(_KEY_COLUMNS)} ON {TRACES} "
    f"FOR EACH ROW WHEN ({_CHANGED}) EXECUTE FUNCTION tracekey_update()",
    f"CREATE TRIGGER tracekey_truncate AFTER TRUNCATE ON {TRACES} "
    "FOR EACH STATEMENT EXECUTE FUNCTION tracekey_truncate()",
]

_SQLITE = [
    f"CREATE TRIGGER tracekey_insert AFTER INSERT ON {TRACES} FOR EACH ROW BEGIN "
    f"INSERT INTO {KEYS} ({_COLUMNS}) VALUES ({_NEW}); END",
    f"CREATE TRIGGER tracekey_delete AFTER DELETE ON {TRACES} FOR EACH ROW BEGIN "
    f"DELETE FROM {KEYS} WHERE trace_id = OLD.id; END",
    f"CREATE TRIGGER tracekey_update AFTER UPDATE OF {', '.join(_KEY_COLUMNS)} ON {TRACES} "
    f"FOR EACH ROW WHEN {_CHANGED} BEGIN UPDATE {KEYS} SET {_SET} WHERE trace_id = NEW.id; END",
]


def triggers_drop(cursor, vendor: str) -> None:
    for name in ("tracekey_insert", "tracekey_delete", "tracekey_update", "tracekey_truncate"):
        if vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {TRACES}")
            cursor.execute(f"DROP FUNCTION IF EXISTS {name}()")
        else:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")


def triggers_create(cursor, vendor: str) -> None:
    """(Re)make the triggers on traces_agenttrace, for `vendor` (a connection's vendor)."""
    triggers_drop(cursor, vendor)
    for statement in _POSTGRESQL if vendor == "postgresql" else _SQLITE:
        cursor.execute(statement)


def keys_fill(cursor) -> None:
    """One key row per stored trace (the migration that makes the table)."""
    cursor.execute(f"INSERT INTO {KEYS} ({_COLUMNS}) SELECT {_SOURCE} FROM {TRACES}")
