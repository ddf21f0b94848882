"""Reads of online evaluation rules."""

from apps.core.errors import NotFoundError

from ..models import EvaluationRule


def rule_list() -> list[EvaluationRule]:
    return list(EvaluationRule.objects.select_related("created_by"))


def rule_get(*, rule_id: int) -> EvaluationRule:
    rule = EvaluationRule.objects.select_related("created_by").filter(pk=rule_id).first()
    if rule is None:
        raise NotFoundError(f"No evaluation rule with id {rule_id}")
    return rule
