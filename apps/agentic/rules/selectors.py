"""Reads of online evaluation rules."""

from apps.core.errors import NotFoundError
from apps.core.models import project_pk

from ..models import EvaluationRule


def _project_rules(project_id: int | None):
    project_id = project_pk(project_id)
    return EvaluationRule.objects.select_related("created_by").filter(project_id=project_id)


def rule_list(*, project_id: int | None = None) -> list[EvaluationRule]:
    """The project's rules (`default` if None)."""
    return list(_project_rules(project_id))


def rule_get(*, rule_id: int, project_id: int | None = None) -> EvaluationRule:
    """The project's rule `rule_id`; another project's is not found, worded the same."""
    rule = _project_rules(project_id).filter(pk=rule_id).first()
    if rule is None:
        raise NotFoundError(f"No evaluation rule with id {rule_id}")
    return rule
