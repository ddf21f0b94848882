"""Rubric writes. Every RubricVersion is published through rubric_publish_version (the API's POST
and PUT, admin saves and restores); the shared rules of publishing are in apps.core.versioning,
this module adds the rubric's snapshot shape and rule rows."""

from apps.bots.selectors import bot_named_in_body
from apps.core.models import project_pk
from apps.core.versioning.services import version_head_create, version_publish

from .models import Rubric, RubricRule, RuleJudge
from .schemas import RubricContent


def rubric_content_snapshot(rubric_id, content: RubricContent) -> dict:
    """The contract's Rubric shape without version and timestamps (those belong to the version row)."""
    return {
        "rubric_id": str(rubric_id),
        "agent_id": content.agent_id,
        "name": content.name,
        "description": content.description,
        "severity_definitions": dict(content.severity_definitions),
        "rules": [rule.model_dump(mode="json") for rule in content.rules],
    }


def _write_rules(rubric: Rubric, content: RubricContent) -> None:
    rubric.rules.all().delete()
    RubricRule.objects.bulk_create(
        RubricRule(
            rubric=rubric,
            position=position,
            rule_id=rule.id,
            name=rule.name,
            severity=rule.severity,
            category=rule.category,
            description=rule.description,
            prompt_reference=rule.prompt_reference,
            pass_conditions=rule.evaluation_criteria.pass_conditions,
            fail_conditions=rule.evaluation_criteria.fail_conditions,
            example_violation=rule.examples.violation,
            example_correct=rule.examples.correct,
            component_scope=rule.component_scope,
            component_ids=rule.component_ids,
            component_names=rule.component_names,
        )
        for position, rule in enumerate(content.rules)
    )


def _publishing(content: RubricContent, project) -> dict:
    """What publishing `content` as a rubric of `project` (a Project or its id) needs from this app:
    its bot is the project's bot named by agent_id, never another project's."""
    project_id = project_pk(project)
    return {
        "snapshot_of": lambda rubric: rubric_content_snapshot(rubric.pk, content),
        "head_fields": lambda: {
            "project_id": project_id,
            "bot": bot_named_in_body(content.agent_id, project=project_id),
            "name": content.name,
            "description": content.description,
            "severity_definitions": dict(content.severity_definitions),
        },
        "write_rows": lambda rubric, _snapshot: _write_rules(rubric, content),
    }


def rubric_create(*, content: RubricContent, project, changelog: str = "", author: str = "", rubric_id=None) -> Rubric:
    """A new rubric of `project` (`rubric_id`, or a fresh uuid when None) and its version 1."""
    return version_head_create(
        model=Rubric, pk=rubric_id, changelog=changelog, author=author, **_publishing(content, project)
    )


def rubric_publish_version(
    *,
    rubric: Rubric,
    content: RubricContent,
    changelog: str = "",
    author: str = "",
    expected_version: int | None = None,
) -> tuple[Rubric, bool]:
    """Make `content` the rubric's head and publish it as the next version (see version_publish)."""
    return version_publish(
        head=rubric,
        changelog=changelog,
        author=author,
        expected_version=expected_version,
        **_publishing(content, rubric.project_id),
    )


def rubric_delete(*, rubric: Rubric) -> None:
    rubric.delete()


def rule_judge_set(
    *,
    rubric: Rubric,
    rule_id: str,
    judge_model: str | None = None,
    instructions: str | None = None,
    trial_id=None,
    author: str = "",
) -> RuleJudge:
    """Put a judge model or rule instructions (the one given; the other stays as it was) in force for
    one rule of `rubric`, for the runs created from now on. Audited by the registry (RubricsConfig)."""
    row = RuleJudge.objects.select_for_update().filter(rubric=rubric, rule_id=rule_id).first()
    row = row or RuleJudge(rubric=rubric, rule_id=rule_id)
    return row.published(judge_model=judge_model, instructions=instructions, trial_id=trial_id, author=author)
