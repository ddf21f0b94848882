"""Rubric reads. A rubric at a version, in the contract's Rubric shape, is read with the shared
selectors of apps.core.versioning (head_data, version_get, version_data, head_list_data); its
version list by the views apps.core.versioning.api.version_views makes."""

from apps.core.selectors import object_get
from apps.core.versioning.selectors import version_data, version_get

from .filters import RubricFilter
from .models import Rubric, RuleJudge


def rubric_get(rubric_id, *, project) -> Rubric:
    """The rubric of `project`; another project's is NotFoundError, as one that does not exist."""
    return object_get(Rubric.objects.filter(project=project).select_related("bot"), rubric_id)


def rubric_list(*, project, filters: dict | None = None):
    """The rubrics of `project` the filters choose (RubricFilter: agent_id), with their bot."""
    return RubricFilter(filters or {}, Rubric.objects.filter(project=project).of_bot(), project=project).qs


def rule_judges_of(rubric_id) -> dict[str, dict]:
    """The rule judges in force on a rubric ({rule_id: {"judge_model", "instructions"}}), as a run
    records them when it is created."""
    return {row.rule_id: row.as_dict() for row in RuleJudge.objects.filter(rubric_id=rubric_id)}


def rubric_version_snapshot(rubric_id, version: int | None, *, project) -> tuple[int, dict]:
    """For the run engine: (version number, the rubric of `project` at that version in the contract's shape)."""
    rubric = rubric_get(rubric_id, project=project)
    found = version_get(rubric, version)
    data = version_data(rubric, found)
    data["created_at"] = data["created_at"].isoformat()
    data["updated_at"] = data["updated_at"].isoformat()
    return found.version, data


# How rule fields are named in a change summary; those not here are named by their key.
_RULE_FIELDS = {
    "name": "name",
    "severity": "severity",
    "category": "category",
    "description": "description",
    "prompt_reference": "prompt reference",
    "component_scope": "component scope",
    "component_ids": "component ids",
    "component_names": "component names",
    "evaluation_criteria.pass_conditions": "pass conditions",
    "evaluation_criteria.fail_conditions": "fail conditions",
    "examples.violation": "violation example",
    "examples.correct": "correct example",
}
_RUBRIC_FIELDS = {"name": "name", "description": "description", "agent_id": "bot"}
_SHORT = 60  # values up to this long are quoted in full (old → new); longer ones are said to have changed


def rubric_version_changes(old: dict, new: dict) -> list[str]:
    """What changed between two snapshots of a rubric, one sentence per change, naming each rule by
    its id and name: "Rule BRIEF_RESPONSES (Brief, Focused Responses): severity medium → high".
    Rules are matched by id, so a changed id reads as one rule removed and another added."""
    changes = [
        f"Rubric {label}: {_change(old.get(key), new.get(key))}"
        for key, label in _RUBRIC_FIELDS.items()
        if old.get(key) != new.get(key)
    ]
    old_definitions, new_definitions = old.get("severity_definitions") or {}, new.get("severity_definitions") or {}
    for level in sorted(set(old_definitions) | set(new_definitions)):
        if old_definitions.get(level) != new_definitions.get(level):
            changes.append(
                f"Severity {level} definition: {_change(old_definitions.get(level), new_definitions.get(level))}"
            )
    old_rules = {rule.get("id"): rule for rule in old.get("rules") or []}
    new_rules = {rule.get("id"): rule for rule in new.get("rules") or []}
    for rule_id, rule in new_rules.items():
        before = old_rules.get(rule_id)
        if before is None:
            changes.append(f"{_rule_name(rule)} added ({rule.get('severity') or 'no'} severity)")
            continue
        fields = [
            f"{label} {_change(_field(before, key), _field(rule, key))}"
            for key, label in _RULE_FIELDS.items()
            if _field(before, key) != _field(rule, key)
        ]
        if fields:
            changes.append(f"{_rule_name(rule)}: {'; '.join(fields)}")
    changes += [f"{_rule_name(rule)} removed" for rule_id, rule in old_rules.items() if rule_id not in new_rules]
    kept_old = [rule_id for rule_id in old_rules if rule_id in new_rules]
    kept_new = [rule_id for rule_id in new_rules if rule_id in old_rules]
    if kept_old != kept_new:
        changes.append("Rules reordered: " + ", ".join(str(rule_id) for rule_id in kept_new))
    return changes


def _rule_name(rule: dict) -> str:
    return f"Rule {rule.get('id')} ({rule.get('name')})" if rule.get("name") else f"Rule {rule.get('id')}"


def _field(rule: dict, dotted: str):
    value = rule
    for part in dotted.split("."):
        value = (value or {}).get(part)
    return value


def _change(old, new) -> str:
    if isinstance(old, list) or isinstance(new, list):
        old, new = old or [], new or []
        added, removed = [v for v in new if v not in old], [v for v in old if v not in new]
        parts = [f"+{len(added)}"] if added else []
        parts += [f"−{len(removed)}"] if removed else []
        return f"changed ({', '.join(parts) or 'reordered'})"
    if _short(old) and _short(new):
        return f"{_shown(old)} → {_shown(new)}"
    return "changed"


def _short(value) -> bool:
    return value is None or (len(str(value)) <= _SHORT and "\n" not in str(value))


def _shown(value) -> str:
    return "(none)" if value in (None, "") else str(value)
