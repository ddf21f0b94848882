"""Model instances from rows of hand-written SQL, for the per-call ingestion path.

QuerySet and RawQuerySet compile their SQL, and work out column order and value converters, on
every call; for intent and complete that was about a quarter of the request's CPU. The statements
here are fixed, so the column list and the converters (jsonb text → Python, SQLite's datetimes and
booleans) are worked out once per model and database vendor, exactly as the ORM's compiler would.
"""

from django.db import connection as default_connection
from django.db.models import Model

_converters_cache: dict[tuple[type[Model], str], list] = {}


def select_columns(model: type[Model], table_alias: str | None = None) -> str:
    """Every concrete column of `model`, in field order: what `from_rows` expects."""
    prefix = f"{table_alias}." if table_alias else ""
    return ", ".join(prefix + field.column for field in model._meta.concrete_fields)


def _converters(model: type[Model], connection) -> list:
    # Per database connection: the backend's converters differ between them.
    key = (model, connection.alias)
    found = _converters_cache.get(key)
    if found is None:
        found = []
        for index, field in enumerate(model._meta.concrete_fields):
            col = field.get_col(model._meta.db_table)
            # The compiler's order: the backend's converters first, then the field's (from_db_value).
            convs = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if convs:
                found.append((index, convs, col))
        _converters_cache[key] = found
    return found


def from_rows(model: type[Model], rows, connection=default_connection) -> list:
    """`model` instances, as loaded from the database, from rows of `select_columns(model)`."""
    converters = _converters(model, connection)
    field_names = [field.attname for field in model._meta.concrete_fields]
    instances = []
    for row in rows:
        values = list(row)
        for index, convs, col in converters:
            value = values[index]
            for convert in convs:
                value = convert(value, col, connection)
            values[index] = value
        instances.append(model.from_db(connection.alias, field_names, values))
    return instances
