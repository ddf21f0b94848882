"""Filters on a result's item JSON, evaluated by the database: the run page pages its table there,
so a filter cannot be applied to rows already read. A tag is an element of the item's `tags` list,
which Django's JSONField lookups cannot test on SQLite (`contains` is PostgreSQL-only), so the
condition is written per database here (jsonb on PostgreSQL, json_each on SQLite) as an expression
the ORM compiles, not a vendor branch; tests/console/test_pages.py checks both against the same rows.
Filters on verdicts are ORM queries over Score rows (EvaluationResultQuerySet.with_failed_rule)."""

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
    sqlite = (
        "EXISTS (SELECT 1 FROM json_each(CASE WHEN json_type({column}, '$.tags') = 'array' "
        "THEN json_extract({column}, '$.tags') ELSE '[]' END) AS tag WHERE tag.type = 'text' AND tag.value = {value})"
    )

    def __init__(self, tag: str):
        super().__init__(F("item"), Value(tag))
