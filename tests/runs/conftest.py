import uuid

import pytest

from apps.core.errors import NotFoundError
from apps.runs import sources
from tests.bots.factories import make_bot_spec
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET, RUBRIC_SNAPSHOT, make_items


@pytest.fixture
def plan(monkeypatch):
    """Bot, test set and rubric as the other apps will serve them (shapes of the contract). Each is
    asked for in a project (the run's), keyword-only as the real sources take it."""
    state = {"bot": make_bot_spec(), "items": make_items(6), "rubric": RUBRIC_SNAPSHOT}

    def bot_spec(agent_id, *, project):
        if agent_id != PLAN_AGENT:
            raise NotFoundError(f"No bot with agent_id {agent_id}")
        return state["bot"]

    def testset_items(test_set_id, version, *, project):
        if test_set_id != PLAN_TEST_SET:
            raise NotFoundError(f"No test set {test_set_id}")
        return version or 2, state["items"]

    def rubric_snapshot(rubric_id, version, *, project):
        if rubric_id != PLAN_RUBRIC:
            raise NotFoundError(f"No rubric {rubric_id}")
        return version or 1, state["rubric"]

    def question_set_items(dataset_id, *, project):
        return [
            {
                "question_id": str(uuid.UUID(int=500)),
                "question": "How much PTO carries over?",
                "expected_answer": "Up to 5 days carry over",
            }
        ]

    for name, fn in [
        ("bot_spec", bot_spec),
        ("testset_items", testset_items),
        ("rubric_snapshot", rubric_snapshot),
        ("question_set_items", question_set_items),
    ]:
        monkeypatch.setattr(sources, name, fn)
    return state
