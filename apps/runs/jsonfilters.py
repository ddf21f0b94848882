"""Filters on a result's JSON columns, evaluated by the database: the run page pages its table
there, so a filter cannot be applied to rows already read. Written per vendor (jsonb functions on
PostgreSQL, json_each on SQLite); each means what the row-building code in selectors means by it,
and tests/console/test_pages.py checks both against the same rows."""

from django.db.models import BooleanField, F, Func, Value


class _JsonCondition(Func):
    output_field = BooleanField()
    postgresql = sqlite = ""

    def _compile(self, compiler, template: str):
        column, column_params = compiler.compile(self.source_expressions[0])
        value, value_params = compiler.compile(self.source_expressions[1])
        # Every placeholder in the templates is the value's; the column is a plain reference.
        if column_params:
            raise ValueError("a JSON condition applies to a column")
        return template.format(column=column, value=value), list(value_params) * template.count("{value}")

    def as_postgresql(self, compiler, connection, **extra_context):
        return self._compile(compiler, self.postgresql)

    def as_sqlite(self, compiler, connection, **extra_context):
        return self._compile(compiler, self.sqlite)


class HasTag(_JsonCondition):
    """The item carries the tag: `tag in item["tags"]`."""

    postgresql = "(jsonb_typeof({column}->'tags') = 'array' AND ({column}->'tags') @> jsonb_build_array({value}::text))"
    sqlite = ("EXISTS (SELECT 1 FROM json_each(CASE WHEN json_type({column}, '$.tags') = 'array' "
              "THEN json_extract({column}, '$.tags') ELSE '[]' END) AS tag WHERE tag.type = 'text' AND tag.value = {value})")

    def __init__(self, tag: str):
        super().__init__(F("item"), Value(tag))


class HasFailedRule(_JsonCondition):
    """A rule verdict of this severity fails (Verdict.failed for a rule): judged and not passed, or
    errored; a rule the judge skipped fails nothing."""

    postgresql = ("EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({column}) = 'array' "
                  "THEN {column} ELSE '[]'::jsonb END) AS verdict WHERE verdict->>'severity' = {value} "
                  "AND COALESCE(verdict->>'status', 'ok') <> 'skipped' "
                  "AND NOT (COALESCE(verdict->>'status', 'ok') = 'ok' AND verdict->'passed' = 'true'::jsonb))")
    sqlite = ("EXISTS (SELECT 1 FROM json_each(CASE WHEN json_type({column}) = 'array' THEN {column} ELSE '[]' END) "
              "AS verdict WHERE json_extract(verdict.value, '$.severity') = {value} "
              "AND COALESCE(json_extract(verdict.value, '$.status'), 'ok') <> 'skipped' "
              "AND NOT (COALESCE(json_extract(verdict.value, '$.status'), 'ok') = 'ok' "
              "AND json_type(verdict.value, '$.passed') = 'true'))")

    def __init__(self, severity: str):
        super().__init__(F("rubric_scores"), Value(severity))
