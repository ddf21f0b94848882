"""Rubrics with their rules and versions. Heads and versions are written by the publishing service,
never straight to the tables, so a rubric built here has exactly the rows an API PUT or an admin save
would leave (head rules, version snapshot, current_version)."""

import factory

from apps.core.versioning.selectors import version_get
from apps.core.versioning.services import snapshot_content
from apps.rubrics.models import Rubric, RubricVersion
from apps.rubrics.schemas import RubricContent
from apps.rubrics.services import rubric_create, rubric_publish_version
from tests.bots.factories import BotFactory


class RubricRuleFactory(factory.DictFactory):
    """One rule in the API's shape, as RubricFactory(rules=[...]) and rubric_body() take it."""

    id = factory.Sequence(lambda n: f"RULE_{n}")
    name = factory.LazyAttribute(lambda o: o.id.replace("_", " ").title())
    severity = "medium"
    component_scope = "prompt"
    evaluation_criteria = factory.LazyFunction(
        lambda: {"pass_conditions": ["Response is under 4 sentences"], "fail_conditions": []}
    )


def rubric_body(agent_id: str, **overrides) -> dict:
    """The body of POST /api/v1/rubrics: two rules, one of each scope the API tests need."""
    body = {
        "agent_id": agent_id,
        "name": "Support rubric",
        "description": "How support answers are judged",
        "severity_definitions": {"high": "Critical", "medium": "Moderate", "low": "Minor"},
        "rules": [
            {
                "id": "BRIEF_RESPONSES",
                "name": "Brief, Focused Responses",
                "severity": "medium",
                "category": "response_quality",
                "description": "Concise answers",
                "prompt_reference": "Section: Communication Style",
                "evaluation_criteria": {"pass_conditions": ["Under 3 sentences"], "fail_conditions": ["Filler"]},
                "examples": {"violation": "Well, so...", "correct": "15 days."},
                "component_scope": "prompt",
                "component_ids": [],
                "component_names": [],
            },
            {
                "id": "USES_KB",
                "name": "Uses the handbook",
                "severity": "high",
                "component_scope": "knowledge_base",
                "evaluation_criteria": {"pass_conditions": ["Cites the handbook"]},
                "component_names": ["Handbook"],
            },
        ],
    }
    body.update(overrides)
    return body


class RubricFactory(factory.django.DjangoModelFactory):
    """A rubric at version 1, published by rubric_create. `rules` defaults to rubric_body()'s two
    rules; pass `rules=[RubricRuleFactory(...)]` or plain dicts to change them."""

    class Meta:
        model = Rubric

    bot = factory.SubFactory(BotFactory)
    name = "Support rubric"
    description = "How support answers are judged"
    severity_definitions = factory.LazyFunction(lambda: {"high": "Critical", "medium": "Moderate", "low": "Minor"})
    rules = factory.LazyAttribute(lambda o: rubric_body(o.bot.agent_id)["rules"])
    changelog = "Created"
    author = ""

    @classmethod
    def _create(cls, model_class, *, bot, changelog, author, rubric_id=None, **content):
        return rubric_create(
            content=RubricContent.model_validate({"agent_id": bot.agent_id, **content}),
            project=bot.project_id,
            changelog=changelog,
            author=author,
            rubric_id=rubric_id,
        )


class RubricVersionFactory(factory.django.DjangoModelFactory):
    """The next version of `rubric`, published by rubric_publish_version: the current content with
    the given fields changed (by default a new description, so there is always something to publish)."""

    class Meta:
        model = RubricVersion

    rubric = factory.SubFactory(RubricFactory)
    description = factory.Sequence(lambda n: f"Edit {n}")
    changelog = "Edited"
    author = ""

    @classmethod
    def _create(cls, model_class, *, rubric, changelog, author, **changes):
        content = RubricContent.model_validate({**snapshot_content(version_get(rubric).snapshot), **changes})
        rubric, _published = rubric_publish_version(rubric=rubric, content=content, changelog=changelog, author=author)
        return rubric.versions.get(version=rubric.current_version)
