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


def scores_copy(rows: Sequence[Score]) -> None:
    """COPYs unsaved Score instances as scores_store would insert them (every concrete column but
    the id, from the instance's attributes and defaults); their pks stay unset. Inside the caller's
    transaction."""
    if not rows:
        return
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in _FIELDS)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {quote(Score._meta.db_table)} ({columns}) FROM STDIN") as copy,
    ):
        for score in rows:
            copy.write_row([_copy_value(field, getattr(score, field.attname)) for field in _FIELDS])
