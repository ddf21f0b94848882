"""Fenced fast path of the agentic writes (see docs/architecture.md, raw SQL): the metric Score rows of
a batch of evaluations go into scores_score with one COPY on PostgreSQL. `bulk_create` builds an
INSERT of 22 columns per row (1,500 rows for a 500-session /evaluate/batch: a 0.7 MB statement whose
every value Django prepares and psycopg quotes), which cost more CPU than the evaluations' own
INSERT. SQLite, and any caller that needs the rows' ids, keep apps.scores.services.scores_store."""

import enum
from collections.abc import Sequence

from django.db import connection, models
from psycopg.types.json import Jsonb

from apps.scores.models import Score

_FIELDS = [field for field in Score._meta.concrete_fields if not field.primary_key]


def enabled() -> bool:
    """The app's one vendor check: the batch's Score COPY here, and the export's COPY
    (api.views._stream, selectors.evaluation_export_jsonl_postgres)."""
    return connection.vendor == "postgresql"


def _copy_value(field: models.Field, value):
    if value is None:
        return None
    if isinstance(field, models.JSONField):
        return Jsonb(value)
    if isinstance(value, enum.Enum):
        # psycopg writes an Enum by its name; the column holds the choice's value.
        return value.value
    return value


def scores_copy(template: Score, rows: Sequence[dict]) -> None:
    """COPYs Score rows as scores_store would insert `template` (an unsaved instance: the values the
    rows share and every default) with each row's own values (a dict by attname) over it; the
    template is converted once, not per row. Inside the caller's transaction."""
    if not rows:
        return
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in _FIELDS)
    shared = {field.attname: _copy_value(field, getattr(template, field.attname)) for field in _FIELDS}
    by_name = {field.attname: field for field in _FIELDS}
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {quote(Score._meta.db_table)} ({columns}) FROM STDIN") as copy,
    ):
        for row in rows:
            values = shared | {name: _copy_value(by_name[name], value) for name, value in row.items()}
            copy.write_row([values[field.attname] for field in _FIELDS])
