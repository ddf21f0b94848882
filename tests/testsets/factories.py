"""Test sets with their items and versions, and V1 question sets. Test set heads and versions are
written by the publishing service, never straight to the tables, so a test set built here has
exactly the rows an API PUT or an admin save would leave.

The factories of TestSet and TestSetVersion are called Suite… because pytest would take a class
named Test… that a test module imports for a test class."""

import factory

from apps.core.models import Project
from apps.core.versioning.selectors import version_get
from apps.core.versioning.services import snapshot_content
from apps.testsets.models import Dataset, TestSet, TestSetVersion
from apps.testsets.schemas import DatasetIn, TestSetContent
from apps.testsets.services import dataset_create, testset_create, testset_publish_version
from tests.bots.factories import BotFactory


class ItemFactory(factory.DictFactory):
    """One single-turn item in the API's shape, as SuiteFactory(items=[...]) takes it."""

    type = "single_turn"
    name = factory.Sequence(lambda n: f"Item {n}")
    inputs = factory.LazyFunction(lambda: {"message": "How many PTO days do I accrue per month?"})
    expected = factory.LazyFunction(lambda: {"success_criteria": ["Response includes the monthly accrual of 1.5 days"]})
    tags = factory.LazyFunction(list)
    priority = "medium"


def make_test_set_payload(agent_id: str, **overrides) -> dict:
    """The body of POST /api/v1/test-sets: a single-turn item and a scripted scenario."""
    body = {
        "agent_id": agent_id,
        "name": "Support test set",
        "description": "Questions",
        "items": [
            {
                "type": "single_turn",
                "name": "PTO Policy Inquiry",
                "inputs": {"message": "What is our PTO policy?"},
                "expected": {
                    "success_criteria": ["Mentions 15 days"],
                    "should_use_tools": ["search_kb"],
                    "should_not_use_tools": ["live_handoff"],
                    "expected_outcome": "PTO info",
                },
                "tags": ["hr", "policy"],
                "priority": "high",
            },
            {
                "type": "scenario",
                "name": "Carry-over chat",
                "inputs": {
                    "persona": "An employee",
                    "initial_message": "Hi, about PTO…",
                    "scripted_turns": ["How many days carry over?", "Merci — and the rest?"],
                },
                "expected": {"success_criteria": ["Says 5 days"]},
                "tags": [],
                "priority": "medium",
            },
        ],
    }
    body.update(overrides)
    return body


class SuiteFactory(factory.django.DjangoModelFactory):
    """A test set at version 1, published by testset_create. `items` defaults to
    make_test_set_payload()'s two items; pass `items=[ItemFactory(...)]` or plain dicts."""

    class Meta:
        model = TestSet

    bot = factory.SubFactory(BotFactory)
    name = "Support test set"
    description = "Questions"
    items = factory.LazyAttribute(lambda o: make_test_set_payload(o.bot.agent_id)["items"])
    changelog = "Created"
    author = ""

    @classmethod
    def _create(cls, model_class, *, bot, changelog, author, test_set_id=None, **content):
        return testset_create(
            content=TestSetContent.model_validate({"agent_id": bot.agent_id, **content}),
            project=bot.project_id,
            changelog=changelog,
            author=author,
            test_set_id=test_set_id,
        )


class SuiteVersionFactory(factory.django.DjangoModelFactory):
    """The next version of `test_set`, published by testset_publish_version: the current content
    with the given fields changed (by default a new description, so there is always something to
    publish). Items keep their item_id, as they do through the API."""

    class Meta:
        model = TestSetVersion

    test_set = factory.SubFactory(SuiteFactory)
    description = factory.Sequence(lambda n: f"Edit {n}")
    changelog = "Edited"
    author = ""

    @classmethod
    def _create(cls, model_class, *, test_set, changelog, author, **changes):
        content = TestSetContent.model_validate({**snapshot_content(version_get(test_set).snapshot), **changes})
        test_set, _published = testset_publish_version(
            test_set=test_set, content=content, changelog=changelog, author=author
        )
        return test_set.versions.get(version=test_set.current_version)


class DatasetFactory(factory.django.DjangoModelFactory):
    """A V1 question set, written by dataset_create."""

    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"Question set {n}")
    description = ""
    bot = None
    # The bot's project, or `default` for a question set of no bot.
    project = factory.LazyAttribute(lambda o: o.bot.project if o.bot is not None else Project.objects.default())
    questions = factory.LazyFunction(
        lambda: [{"question": "How much PTO carries over?", "expected_answer": "Up to 5 days carry over"}]
    )

    @classmethod
    def _create(cls, model_class, *, bot, project, dataset_id=None, **data):
        agent_id = bot.agent_id if bot is not None else None
        return dataset_create(
            data=DatasetIn.model_validate({"agent_id": agent_id, **data}), project=project, dataset_id=dataset_id
        )
