"""The lists of rows that belong to a bot (test sets, question sets, rubrics) share one filter,
apps.bots.filters.OfBotFilter, applied by each list's selector (issue 22, point 6): the same
agent_id answers, and the same 404 for a bot that does not exist, blank included."""

import pytest

from tests.bots.factories import BotFactory
from tests.rubrics.factories import RubricFactory
from tests.testsets.factories import DatasetFactory, SuiteFactory

pytestmark = pytest.mark.django_db

LISTS = (
    ("/api/v1/test-sets", SuiteFactory, "test_set_id"),
    ("/api/v1/datasets", DatasetFactory, "dataset_id"),
    ("/api/v1/rubrics", RubricFactory, "rubric_id"),
)


@pytest.mark.parametrize(("path", "factory", "key"), LISTS)
def test_each_list_answers_the_named_bots_rows(api, path, factory, key):
    bot, other = BotFactory(), BotFactory()
    mine, theirs = factory(bot=bot), factory(bot=other)
    assert [row[key] for row in api.get(path, {"agent_id": bot.agent_id}).json()] == [str(mine.pk)]
    assert {row[key] for row in api.get(path).json()} == {str(mine.pk), str(theirs.pk)}


@pytest.mark.parametrize(("path", "factory", "key"), LISTS)
def test_a_bot_that_does_not_exist_is_404_blank_included(api, path, factory, key):
    factory(bot=BotFactory())
    for agent_id in ("64f1c0ffee0000000000dead", ""):
        response = api.get(path, {"agent_id": agent_id})
        assert response.status_code == 404, agent_id
        assert response.json() == {"detail": f"No bot with agent_id {agent_id}"}
