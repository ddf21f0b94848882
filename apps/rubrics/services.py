"""Rubric writes. rubric_publish_version is the only code that creates a RubricVersion: the API's
POST and PUT, admin saves and restores all go through it."""

from django.db import IntegrityError, transaction

from apps.bots.models import Bot
from apps.core.errors import ConflictError, InvalidInputError, NotFoundError

from .models import Rubric, RubricRule, RubricVersion
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


def _bot(agent_id: str) -> Bot:
    bot = Bot.objects.filter(agent_id=agent_id).first()
    if bot is None:
        raise InvalidInputError(f"agent_id {agent_id} does not name a bot")
    return bot


def _write_head(rubric: Rubric, content: RubricContent, bot: Bot) -> None:
    rubric.agent = bot
    rubric.name = content.name
    rubric.description = content.description
    rubric.severity_definitions = dict(content.severity_definitions)
    rubric.rules.all().delete()
    RubricRule.objects.bulk_create(
        RubricRule(
            rubric=rubric, position=position, rule_id=rule.id, name=rule.name, severity=rule.severity,
            category=rule.category, description=rule.description, prompt_reference=rule.prompt_reference,
            pass_conditions=rule.evaluation_criteria.pass_conditions,
            fail_conditions=rule.evaluation_criteria.fail_conditions,
            example_violation=rule.examples.violation, example_correct=rule.examples.correct,
            component_scope=rule.component_scope, component_ids=rule.component_ids,
            component_names=rule.component_names,
        )
        for position, rule in enumerate(content.rules)
    )


def _content_of(snapshot: dict) -> dict:
    return {k: v for k, v in snapshot.items() if k not in ("version", "created_at", "updated_at")}


@transaction.atomic
def rubric_create(*, content: RubricContent, changelog: str = "", author: str = "", rubric_id=None) -> Rubric:
    """A new rubric and its version 1."""
    bot = _bot(content.agent_id)
    rubric = Rubric(agent=bot, name=content.name)
    if rubric_id is not None:
        rubric.rubric_id = rubric_id
    rubric.save(force_insert=True)
    rubric_publish_version(rubric=rubric, content=content, changelog=changelog or "Created", author=author)
    rubric.refresh_from_db()
    return rubric


def rubric_publish_version(*, rubric: Rubric, content: RubricContent, changelog: str = "", author: str = "",
                           expected_version: int | None = None) -> tuple[Rubric, bool]:
    """Make `content` the rubric's head and publish it as the next version.

    Returns (rubric, published). Content equal to the current version publishes nothing. With
    expected_version, an edit based on an older version is refused (ConflictError) so two editors
    never overwrite each other silently."""
    with transaction.atomic():
        try:
            locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
        except Rubric.DoesNotExist:
            raise NotFoundError(f"No rubric {rubric.pk}") from None
        if expected_version is not None and expected_version != locked.current_version:
            raise ConflictError(
                f"Rubric {locked.pk} is at version {locked.current_version}; this edit is based on version "
                f"{expected_version}. Reload it and apply your change again.")
        snapshot = rubric_content_snapshot(locked.pk, content)
        if locked.current_version:
            current = RubricVersion.objects.get(rubric=locked, version=locked.current_version)
            if _content_of(current.snapshot) == snapshot:
                return locked, False
        bot = _bot(content.agent_id)
        _write_head(locked, content, bot)
        locked.current_version += 1
        locked.save()
        try:
            with transaction.atomic():
                RubricVersion.objects.create(rubric=locked, version=locked.current_version,
                                             snapshot={**snapshot, "version": locked.current_version},
                                             changelog=changelog, author=author)
        except IntegrityError:
            raise ConflictError(f"Version {locked.current_version} of rubric {locked.pk} was published "
                                "concurrently; reload and try again.") from None
    return locked, True


def rubric_restore_version(*, rubric: Rubric, version: int, author: str = "") -> tuple[Rubric, bool]:
    """Publish an old version's content as a new version (history is never rewritten)."""
    old = RubricVersion.objects.filter(rubric=rubric, version=version).first()
    if old is None:
        raise NotFoundError(f"Rubric {rubric.pk} has no version {version}")
    content = RubricContent.model_validate(_content_of(old.snapshot))
    return rubric_publish_version(rubric=rubric, content=content, changelog=f"Restored version {version}",
                                  author=author)


def rubric_delete(*, rubric: Rubric) -> None:
    rubric.delete()
