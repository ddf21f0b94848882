import uuid

import pytest

from apps.core.errors import NotFoundError
from apps.runs import sources
from tests.bots.test_adapters import spec
from tests.runs.test_executor import PTO_ITEM, RUBRIC

AGENT = "a" * 24
TEST_SET = uuid.UUID(int=1)
RUBRIC_ID = uuid.UUID(int=2)
DATASET = uuid.UUID(int=3)


def make_items(n):
    items = []
    for i in range(n):
        item = {**PTO_ITEM, "item_id": str(uuid.UUID(int=100 + i)), "name": f"item {i}"}
        if i % 3 == 2:
            item = {**item, "inputs": {"message": "What is the wifi password?"},
                    "expected": {"success_criteria": ["Response includes the wifi password"]}}
        items.append(item)
    return items


@pytest.fixture
def plan(monkeypatch):
    """Bot, test set and rubric as the other apps will serve them (shapes of the contract)."""
    state = {"bot": spec(), "items": make_items(6), "rubric": RUBRIC}

    def bot_spec(agent_id):
        if agent_id != AGENT:
            raise NotFoundError(f"No bot with agent_id {agent_id}")
        return state["bot"]

    def test_set_items(test_set_id, version):
        if test_set_id != TEST_SET:
            raise NotFoundError(f"No test set {test_set_id}")
        return version or 2, state["items"]

    def rubric_snapshot(rubric_id, version):
        if rubric_id != RUBRIC_ID:
            raise NotFoundError(f"No rubric {rubric_id}")
        return version or 1, state["rubric"]

    def question_set_items(dataset_id):
        return [{"question_id": str(uuid.UUID(int=500)), "question": "How much PTO carries over?",
                 "expected_answer": "Up to 5 days carry over"}]

    for name, fn in [("bot_spec", bot_spec), ("test_set_items", test_set_items), ("rubric_snapshot", rubric_snapshot),
                     ("question_set_items", question_set_items)]:
        monkeypatch.setattr(sources, name, fn)
    return state
