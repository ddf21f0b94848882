"""What a run reads from the bots, test sets and rubrics apps: plain data in the contract's shapes.

Each function raises NotFoundError for an unknown id (or a version that does not exist)."""

from apps.bots.adapters import BotSpec


def bot_spec(agent_id: str) -> BotSpec:
    raise NotImplementedError


def test_set_items(test_set_id, version: int | None, *, agent_id: str) -> tuple[int, list[dict]]:
    raise NotImplementedError


def rubric_snapshot(rubric_id, version: int | None, *, agent_id: str) -> tuple[int, dict]:
    raise NotImplementedError


def question_set_items(dataset_id, *, agent_id: str) -> list[dict]:
    raise NotImplementedError
