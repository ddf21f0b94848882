"""The traces app's raw SQL, fenced in one module: the one place that asks which database this is,
and the one cursor.

Ingestion is the hot path of evalsite (an agent fleet reporting every step, OTLP exporters sending
thousands of spans a second), and a few of its statements are written by hand because the ORM
cannot say them in one round trip: COPY for bulk rows, INSERT … ON CONFLICT DO NOTHING RETURNING
for span ids, UPDATE … RETURNING with the ledger entry in the same statement, SET LOCAL
lock_timeout, and the trace reads that skip query compilation. Every caller asks `enabled()` and
keeps an ORM path for other databases (SQLite, the embedded default and the tests), so both stay
exercised; the statements that run on both (the tool call reads, SQLite's span insert) go through
the same helpers. Measured by bench/ingest.py and bench/otlp.py.

The trace list's two statements go through here too (selectors.trace_agent_names, a loose index
scan as WITH RECURSIVE, which both databases run; filters.trace_text_search_indexed, a probe of
pg_indexes behind `enabled()`), so the traces app has one vendor check and one cursor in all.
Measured by bench/trace_list.py.
"""

from collections.abc import Iterable, Sequence
from contextlib import contextmanager

from django.db import connection


def enabled() -> bool:
    """Whether the PostgreSQL fast paths run: the app's one check of the database vendor."""
    return connection.vendor == "postgresql"


@contextmanager
def _cursor():
    # wrap_database_errors: psycopg's own errors (COPY goes to its cursor directly) reach callers as
    # Django's, so they catch IntegrityError, not psycopg's UniqueViolation.
    with connection.wrap_database_errors, connection.cursor() as cursor:
        yield cursor


def fetch_all(sql: str, params=None) -> list[tuple]:
    with _cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def fetch_one(sql: str, params=None) -> tuple | None:
    with _cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def execute(sql: str, params=None) -> None:
    with _cursor() as cursor:
        cursor.execute(sql, params)


def copy_rows(sql: str, rows: Iterable[Sequence]) -> None:
    """PostgreSQL: stream rows into `COPY … FROM STDIN` (`sql`) inside the current transaction."""
    with _cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)
