"""A join from a judged model to its Score rows, for the reads that need a subject's own fields beside
its scores in one ORM query (on SQLite and PostgreSQL alike)."""

from typing import Any

from django.db import models
from django.db.models.sql.where import AND, WhereNode


class ScoresJoin(models.ForeignObject):
    """Not a column: the join from a subject (its pk) to its Score rows (Score.subject_id), restricted
    to the subclass's `subject_kind` and, if set, `score_kind` — the way GenericRelation joins content
    types. Each app declares a subclass on its model (agentic.models.MetricScoresJoin,
    runs.models.VerdictScoresJoin), so its migrations name a class of its own. Never read as an
    attribute: a subject has many such rows; narrow them with a FilteredRelation or aggregate them."""

    subject_kind: str = ""
    score_kind: str | None = None
    # No column, so no foreign key constraint (the schema editors ask).
    db_constraint = False

    def __init__(self, **kwargs: Any) -> None:
        kwargs.update(
            from_fields=["id"], to_fields=["subject_id"], on_delete=models.DO_NOTHING, related_name="+", null=True
        )
        super().__init__("scores.Score", **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        for key in ("from_fields", "to_fields", "on_delete", "related_name", "null", "to"):
            kwargs.pop(key, None)
        return name, path, args, kwargs

    def _check_unique_target(self) -> list:
        # Score.subject_id is not unique, by design: the join is one-to-many.
        return []

    def get_extra_restriction(self, alias: str, related_alias: str | None) -> WhereNode:
        score = self.remote_field.model._meta
        restrictions = {"subject_kind": self.subject_kind, **({"kind": self.score_kind} if self.score_kind else {})}
        fields: list[Any] = [score.get_field(name) for name in restrictions]
        conditions: list[Any] = [
            field.get_lookup("exact")(field.get_col(alias), value)
            for field, value in zip(fields, restrictions.values(), strict=True)
        ]
        return WhereNode(conditions, connector=AND)
