"""The API's JSON renderer answers any value a stored row can hand back, not only what orjson takes."""

import json
from datetime import UTC, datetime

import pytest

from apps.core.api.renderers import OrjsonRenderer


def nested(depth: int) -> dict:
    value: object = {"leaf": "x"}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    "value", [{"n": 10**20, "m": -(10**20)}, nested(100), nested(300)], ids=["big int", "100 deep", "300 deep"]
)
def test_values_orjson_refuses_render_exactly(value):
    data = {"value": value, "at": datetime(2026, 11, 25, 12, 0, tzinfo=UTC)}
    rendered = OrjsonRenderer().render(data)
    decoded = json.loads(rendered)
    assert decoded["value"] == value
    assert decoded["at"].startswith("2026-11-25T12:00:00")
