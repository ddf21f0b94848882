import json
import uuid

import pytest

from apps.core.errors import NotFoundError
from apps.core.models import Project
from apps.testsets.models import TestItem, TestSet, TestSetVersion
from apps.testsets.selectors import testset_version_items
from tests.bots.factories import BotFactory
from tests.testsets.factories import SuiteFactory, make_test_set_payload

pytestmark = pytest.mark.django_db
TEST_SET_KEYS = {"test_set_id", "agent_id", "version", "name", "description", "items", "created_at", "updated_at"}
ITEM_KEYS = {"item_id", "type", "name", "inputs", "expected", "tags", "priority"}


@pytest.fixture
def bot():
    return BotFactory(tool_names=["search_kb", "live_handoff"])


@pytest.fixture
def test_set(api, bot):
    response = api.post("/api/v1/test-sets", make_test_set_payload(bot.agent_id), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_in_the_contract_shape(api, test_set):
    assert set(test_set) == TEST_SET_KEYS | {"warnings"} and test_set["warnings"] == []
    assert test_set["version"] == 1
    single, scenario = test_set["items"]
    assert set(single) == ITEM_KEYS and uuid.UUID(single["item_id"])
    assert single["inputs"] == {"message": "What is our PTO policy?"}
    assert scenario["inputs"] == {
        "persona": "An employee",
        "initial_message": "Hi, about PTO…",
        "max_turns": 8,
        "scripted_turns": ["How many days carry over?", "Merci — and the rest?"],
    }
    assert single["expected"] == {
        "success_criteria": ["Mentions 15 days"],
        "should_use_tools": ["search_kb"],
        "should_not_use_tools": ["live_handoff"],
        "expected_outcome": "PTO info",
    }
    got = api.get(f"/api/v1/test-sets/{test_set['test_set_id']}")
    assert got.status_code == 200 and got["ETag"] == '"v1"'
    assert got.json() == {k: v for k, v in test_set.items() if k != "warnings"}


def test_unknown_tools_warn_but_save(api, bot):
    body = make_test_set_payload(bot.agent_id)
    body["items"][0]["expected"]["should_use_tools"] = ["search_kb", "book_flight"]
    response = api.post("/api/v1/test-sets", body, format="json")
    assert response.status_code == 201
    [warning] = response.json()["warnings"]
    assert "book_flight" in warning and "should_use_tools" in warning and "PTO Policy Inquiry" in warning
    assert TestSet.objects.count() == 1


def test_put_versions_keep_item_ids(api, bot, test_set):
    tid = test_set["test_set_id"]
    ids = [i["item_id"] for i in test_set["items"]]
    # A client that never sends item ids: items keep theirs by name.
    body = make_test_set_payload(bot.agent_id, version=1, changelog="Priority")
    body["items"][1]["priority"] = "low"
    body["items"].append({"type": "single_turn", "name": "New", "inputs": {"message": "Hello"}})
    response = api.put(f"/api/v1/test-sets/{tid}", body, format="json")
    assert response.status_code == 200 and response.json()["version"] == 2
    items = response.json()["items"]
    assert [i["item_id"] for i in items[:2]] == ids and items[2]["item_id"] not in ids
    # Reordering with explicit ids.
    reordered = {**response.json(), "items": list(reversed(items)), "version": 2}
    response = api.put(f"/api/v1/test-sets/{tid}", reordered, format="json")
    assert [i["item_id"] for i in response.json()["items"]] == [items[2]["item_id"], *reversed(ids)]
    versions = api.get(f"/api/v1/test-sets/{tid}/versions").json()
    assert [(v["version"], v["item_count"]) for v in versions] == [(3, 3), (2, 3), (1, 2)]
    v1 = api.get(f"/api/v1/test-sets/{tid}/versions/1").json()
    assert v1["version"] == 1 and [i["item_id"] for i in v1["items"]] == ids and v1["changelog"] == "Created"
    number, run_items = testset_version_items(tid, None, project=Project.objects.default())
    assert number == 3 and run_items == response.json()["items"]
    assert testset_version_items(tid, 1, project=Project.objects.default()) == (1, v1["items"])


def test_noop_put_and_stale_put(api, bot, test_set):
    tid = test_set["test_set_id"]
    same = api.put(f"/api/v1/test-sets/{tid}", test_set, format="json")
    assert same.status_code == 200 and same.json()["version"] == 1
    assert TestSetVersion.objects.count() == 1
    changed = api.put(f"/api/v1/test-sets/{tid}", {**test_set, "name": "New"}, format="json")
    assert changed.json()["version"] == 2
    stale = api.put(f"/api/v1/test-sets/{tid}", {**test_set, "name": "Other"}, format="json")
    assert stale.status_code == 409
    stale = api.put(
        f"/api/v1/test-sets/{tid}",
        {**test_set, "name": "Other", "version": None},
        format="json",
        HTTP_IF_MATCH='W/"v1"',
    )
    assert stale.status_code == 409
    assert api.get(f"/api/v1/test-sets/{tid}").json()["name"] == "New"


def _item(**change):
    item = {"type": "single_turn", "name": "I", "inputs": {"message": "hi"}}
    item.update(change)
    return item


@pytest.mark.parametrize(
    "items, fragment",
    [
        ([_item(type="multi_turn")], "type"),
        ([_item(inputs={})], "needs inputs.message"),
        ([_item(inputs={"message": "   "})], "needs inputs.message"),
        ([_item(type="scenario", inputs={"persona": "p"})], "needs inputs.initial_message"),
        ([_item(type="scenario", inputs={"initial_message": "m"})], "needs inputs.persona"),
        ([_item(type="scenario", inputs={"persona": "p", "initial_message": "m", "max_turns": 51})], "max_turns"),
        ([_item(type="scenario", inputs={"persona": "p", "initial_message": "m", "max_turns": 0})], "max_turns"),
        (
            [_item(type="scenario", inputs={"persona": "p", "initial_message": "m", "scripted_turns": "hi"})],
            "scripted_turns",
        ),
        ([_item(priority="urgent")], "priority"),
        (
            [
                _item(item_id="5b0c2f0e-3d4a-4c52-9a51-0c0000000001"),
                _item(item_id="5b0c2f0e-3d4a-4c52-9a51-0c0000000001"),
            ],
            "duplicate item_id",
        ),
        ([_item(item_id="not-a-uuid")], "item_id"),
        ([_item(expected={"success_criteria": [""]})], "success_criteria"),
    ],
)
def test_bad_items_are_422_and_write_nothing(api, bot, items, fragment):
    response = api.post("/api/v1/test-sets", make_test_set_payload(bot.agent_id, items=items), format="json")
    assert response.status_code == 422, response.json()
    assert fragment in json.dumps(response.json()["detail"])
    assert not TestSet.objects.exists() and not TestItem.objects.exists()


def test_unknown_agent_and_ids(api, staff_api, bot, test_set):
    response = api.post("/api/v1/test-sets", make_test_set_payload("64f1c0ffee0000000000dead"), format="json")
    assert response.status_code == 422 and "does not name a bot" in response.json()["detail"]
    assert not TestSet.objects.exclude(pk=test_set["test_set_id"]).exists()
    unknown = "00000000-0000-0000-0000-000000000000"
    for path in (
        f"/api/v1/test-sets/{unknown}",
        f"/api/v1/test-sets/{unknown}/versions",
        "/api/v1/test-sets/x",
        f"/api/v1/test-sets/{test_set['test_set_id']}/versions/5",
        f"/api/v1/test-sets/{unknown}/export",
        "/api/v1/test-sets?agent_id=64f1c0ffee0000000000dead",
    ):
        assert api.get(path).status_code == 404, path
    assert (
        api.put(f"/api/v1/test-sets/{unknown}", make_test_set_payload(bot.agent_id), format="json").status_code == 404
    )
    assert staff_api.delete(f"/api/v1/test-sets/{unknown}").status_code == 404
    with pytest.raises(NotFoundError):
        testset_version_items(unknown, None, project=Project.objects.default())
    with pytest.raises(NotFoundError):
        testset_version_items(test_set["test_set_id"], 4, project=Project.objects.default())


def test_bad_put_writes_nothing(api, bot, test_set):
    tid = test_set["test_set_id"]
    response = api.put(
        f"/api/v1/test-sets/{tid}", make_test_set_payload(bot.agent_id, items=[_item(inputs={})]), format="json"
    )
    assert response.status_code == 422
    assert TestItem.objects.count() == 2 and TestSetVersion.objects.count() == 1


def test_list_and_delete(api, staff_api, bot, test_set):
    BotFactory()
    assert [t["name"] for t in api.get(f"/api/v1/test-sets?agent_id={bot.agent_id}").json()] == ["Support test set"]
    tid = test_set["test_set_id"]
    assert api.delete(f"/api/v1/test-sets/{tid}").status_code == 403
    assert staff_api.delete(f"/api/v1/test-sets/{tid}").status_code == 204
    assert not TestSetVersion.objects.exists()


def test_list_query_count_does_not_grow_with_test_sets(api, bot, django_assert_max_num_queries):
    for n in range(6):
        SuiteFactory(bot=bot, name=f"T{n}")
    with django_assert_max_num_queries(6):
        assert len(api.get("/api/v1/test-sets").json()) == 6
