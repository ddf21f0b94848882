"""Configuration endpoints answer 422 naming a field they do not know (issue 12, item 10).

They silently dropped such fields: an item-level `success_criteria` (it belongs in `expected`) gave a
test set, and then a run, with no criteria at all. What a GET returned can still be sent back as it is
(ids, timestamps and counts are ignored). Ingestion, TRACE, NL query and the agentic endpoints keep
the contracts' tolerance and are not concerned."""

import json

import pytest

from apps.rubrics.models import Rubric
from apps.testsets.models import TestSet
from tests.bots.factories import BotFactory, KnowledgeDocumentFactory, bot_body
from tests.rubrics.factories import RubricFactory, rubric_body
from tests.testsets.factories import DatasetFactory, SuiteFactory, make_test_set_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot():
    return BotFactory(tool_names=["search_kb", "live_handoff"])


def _unknown(response, *loc):
    assert response.status_code == 422, response.content
    locs = [err["loc"] for err in response.json()["detail"]]
    assert list(loc) in locs, locs


def test_item_level_success_criteria_is_422_and_creates_nothing(api, bot):
    body = make_test_set_payload(bot.agent_id)
    body["items"][0]["success_criteria"] = ["Says 15 days"]
    _unknown(api.post("/api/v1/test-sets", body, format="json"), "items", 0, "success_criteria")
    assert not TestSet.objects.exists()


@pytest.mark.parametrize(
    "where, loc",
    [
        (lambda b: b.update(colour="red"), ["colour"]),
        (lambda b: b["items"][0]["inputs"].update(mesage="typo"), ["items", 0, "inputs", "mesage"]),
        (lambda b: b["items"][0]["expected"].update(criteria=["x"]), ["items", 0, "expected", "criteria"]),
    ],
)
def test_test_set_unknown_fields(api, bot, where, loc):
    body = make_test_set_payload(bot.agent_id)
    where(body)
    _unknown(api.post("/api/v1/test-sets", body, format="json"), *loc)


def test_test_set_import_file_with_an_unknown_item_field_is_422(api, bot):
    items = make_test_set_payload(bot.agent_id)["items"]
    items[0]["success_criteria"] = ["Says 15 days"]
    body = "".join(json.dumps(item) + "\n" for item in items)
    response = api.post(
        f"/api/v1/test-sets/import?format=jsonl&agent_id={bot.agent_id}&name=Imported",
        data=body.encode(),
        content_type="application/x-ndjson",
    )
    assert response.status_code == 422, response.content
    assert "success_criteria" in json.dumps(response.json()["detail"])
    assert not TestSet.objects.exists()


@pytest.mark.parametrize(
    "where, loc",
    [
        (lambda b: b.update(owner="me"), ["owner"]),
        (lambda b: b["rules"][0].update(weight=3), ["rules", 0, "weight"]),
        (
            lambda b: b["rules"][0]["evaluation_criteria"].update(must=["x"]),
            ["rules", 0, "evaluation_criteria", "must"],
        ),
    ],
)
def test_rubric_unknown_fields(api, bot, where, loc):
    body = rubric_body(bot.agent_id)
    where(body)
    _unknown(api.post("/api/v1/rubrics", body, format="json"), *loc)
    assert not Rubric.objects.exists()


@pytest.mark.parametrize(
    "where, loc",
    [
        (lambda b: b.update(temperature=0.2), ["temperature"]),
        (lambda b: b["llm_config"].update(temprature=0.2), ["llm_config", "temprature"]),
        (lambda b: b["tools"][0].update(schema={}), ["tools", 0, "schema"]),
        (
            lambda b: b["knowledge_bases"][0]["documents"][0].update(url="x"),
            ["knowledge_bases", 0, "documents", 0, "url"],
        ),
    ],
)
def test_bot_unknown_fields(api, where, loc):
    body = bot_body(adapter="demo")
    where(body)
    _unknown(api.post("/api/v1/bots", body, format="json"), *loc)


def test_dataset_unknown_fields(api):
    body = {"name": "Q", "questions": [{"question": "PTO?", "expected_answer": "15", "answer": "x"}]}
    _unknown(api.post("/api/v1/datasets", body, format="json"), "questions", 0, "answer")


def test_free_form_json_fields_keep_any_key(api):
    body = bot_body(
        adapter="demo",
        harness_context={"anything": {"goes": [1]}},
        llm_config={"provider": "openai", "model": "m", "parameters": {"top_k": 3, "custom": "x"}},
    )
    assert api.post("/api/v1/bots", body, format="json").status_code == 201


def test_what_get_returns_can_be_put_back(api, bot):
    # Read-only fields of the GET shape are ignored, so a client may edit the object it fetched.
    test_set = SuiteFactory(bot=bot)
    fetched = api.get(f"/api/v1/test-sets/{test_set.test_set_id}").json()
    fetched["name"] = "Renamed"
    response = api.put(f"/api/v1/test-sets/{test_set.test_set_id}", fetched, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 2

    rubric = RubricFactory(bot=bot)
    fetched = api.get(f"/api/v1/rubrics/{rubric.rubric_id}").json()
    fetched["description"] = "Edited"
    response = api.put(f"/api/v1/rubrics/{rubric.rubric_id}", fetched, format="json")
    assert response.status_code == 200, response.content

    # A bot with tools and a knowledge base, so the nested lists make the round trip too.
    other = BotFactory(tool_names=["search_kb", "live_handoff"])
    KnowledgeDocumentFactory(knowledge_base__bot=other)
    fetched = api.get(f"/api/v1/bots/{other.agent_id}").json()
    fetched["name"] = "Renamed bot"
    response = api.put(f"/api/v1/bots/{other.agent_id}", fetched, format="json")
    assert response.status_code == 200, response.content

    dataset = api.get(f"/api/v1/datasets/{DatasetFactory().dataset_id}").json()
    dataset["name"] = "Renamed dataset"
    response = api.put(f"/api/v1/datasets/{dataset['dataset_id']}", dataset, format="json")
    assert response.status_code == 200, response.content
