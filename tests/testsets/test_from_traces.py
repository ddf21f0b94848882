"""POST /api/v1/test-sets/{id}/items/from-traces: production traces become test items in a new
test-set version, each keeping where it came from (`source_session_id`); all or nothing."""

from datetime import UTC, datetime

import pytest

from apps.testsets.models import TestItem, TestSetVersion
from tests.bots.factories import BotFactory
from tests.core.factories import ProjectFactory
from tests.testsets.factories import make_test_set_payload
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def test_set(api):
    bot = BotFactory(tool_names=["search_kb", "live_handoff"])
    response = api.post("/api/v1/test-sets", make_test_set_payload(bot.agent_id), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def url(test_set) -> str:
    return f"/api/v1/test-sets/{test_set['test_set_id']}/items/from-traces"


def versions(test_set) -> int:
    return TestSetVersion.objects.filter(test_set_id=test_set["test_set_id"]).count()


def test_session_ids_with_shared_expectations_publish_one_version(api, test_set):
    AgentTraceFactory(session_id="prod-1", user_query="Reset my VPN token please")
    AgentTraceFactory(session_id="prod-2", user_query="Why was I charged twice?")
    response = api.post(
        url(test_set),
        {
            "session_ids": ["prod-1", "prod-2"],
            "expected_outcome": "Answers from the knowledge base",
            "success_criteria": ["Cites a source"],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["version"] == 2
    old, new = body["items"][:2], body["items"][2:]
    assert [i["item_id"] for i in old] == [i["item_id"] for i in test_set["items"]], "existing items kept"
    assert [i["source_session_id"] for i in new] == ["prod-1", "prod-2"]
    assert new[0]["type"] == "single_turn"
    assert new[0]["inputs"] == {"message": "Reset my VPN token please"}
    assert new[0]["expected"]["expected_outcome"] == "Answers from the knowledge base"
    assert new[1]["expected"]["success_criteria"] == ["Cites a source"]
    assert "from-trace" in new[0]["tags"]
    # Items written by hand keep the contract's shape: no provenance key at all.
    assert all("source_session_id" not in i for i in old)
    # The rows and a later GET say the same.
    assert set(TestItem.objects.exclude(source_session_id=None).values_list("source_session_id", flat=True)) == {
        "prod-1",
        "prod-2",
    }
    got = api.get(f"/api/v1/test-sets/{test_set['test_set_id']}").json()
    assert got["items"][2]["source_session_id"] == "prod-1"


def test_items_carry_their_own_expectations(api, test_set):
    AgentTraceFactory(session_id="a", user_query="q a")
    AgentTraceFactory(session_id="b", user_query="q b")
    response = api.post(
        url(test_set),
        {
            "items": [
                {"session_id": "a", "expected_outcome": "A", "success_criteria": ["one"]},
                {"session_id": "b", "expected_outcome": "B"},
            ]
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    a, b = response.json()["items"][2:]
    assert (a["expected"]["expected_outcome"], a["expected"]["success_criteria"]) == ("A", ["one"])
    assert (b["expected"]["expected_outcome"], b["expected"]["success_criteria"]) == ("B", [])


def test_a_conversation_becomes_a_scenario_of_its_user_turns(api, test_set):
    for n, query in enumerate(["Hi, my order is late", "It was order 1234", "Can I get a refund?"]):
        AgentTraceFactory(
            session_id=f"conv-{n}",
            user_query=query,
            metadata={"otel": {"conversation_id": "c-77"}},
            start_time=datetime(2026, 11, 20, 10, n, tzinfo=UTC),
        )
    # Another conversation and a later turn of this one are not replayed.
    AgentTraceFactory(session_id="other", user_query="unrelated", metadata={"otel": {"conversation_id": "c-78"}})
    AgentTraceFactory(
        session_id="later",
        user_query="after",
        metadata={"conversation_id": "c-77"},
        start_time=datetime(2026, 11, 21, tzinfo=UTC),
    )
    response = api.post(url(test_set), {"session_ids": ["conv-2"]}, format="json")
    assert response.status_code == 201, response.json()
    (item,) = response.json()["items"][2:]
    assert item["type"] == "scenario"
    assert item["inputs"]["initial_message"] == "Hi, my order is late"
    assert item["inputs"]["scripted_turns"] == ["It was order 1234", "Can I get a refund?"]
    assert item["inputs"]["max_turns"] == 3
    assert item["source_session_id"] == "conv-2"


def test_an_unknown_session_id_is_422_and_publishes_nothing(api, test_set):
    AgentTraceFactory(session_id="known")
    response = api.post(url(test_set), {"session_ids": ["known", "nope"]}, format="json")
    assert response.status_code == 422
    assert "'nope'" in response.json()["detail"] and "'known'" not in response.json()["detail"]
    assert versions(test_set) == 1
    assert not TestItem.objects.exclude(source_session_id=None).exists()


def test_another_projects_trace_is_unknown_here(api, test_set):
    AgentTraceFactory(session_id="theirs", project=ProjectFactory())
    response = api.post(url(test_set), {"session_ids": ["theirs"]}, format="json")
    assert response.status_code == 422
    assert versions(test_set) == 1


def test_a_trace_already_in_the_test_set_is_refused(api, test_set):
    AgentTraceFactory(session_id="once")
    assert api.post(url(test_set), {"session_ids": ["once"]}, format="json").status_code == 201
    again = api.post(url(test_set), {"session_ids": ["once"]}, format="json")
    assert again.status_code == 422 and "Already in the test set" in again.json()["detail"]
    assert versions(test_set) == 2


@pytest.mark.parametrize(
    "body, message",
    [
        ({}, "either session_ids"),
        ({"session_ids": ["a"], "items": [{"session_id": "b"}]}, "either session_ids"),
        ({"session_ids": []}, "at least 1"),
        ({"session_ids": ["a", "a"]}, "more than once"),
        ({"items": [{"session_id": "a"}], "expected_outcome": "x"}, "each item carries"),
        ({"session_ids": [7]}, "string"),
        ({"session_ids": ["a"], "success_criteria": "not a list"}, "list"),
        ({"session_ids": ["a"], "surprise": 1}, "surprise"),
        ({"session_ids": ["x" * 256]}, "255"),
    ],
)
def test_bad_bodies_are_422(api, test_set, body, message):
    AgentTraceFactory(session_id="a")
    response = api.post(url(test_set), body, format="json")
    assert response.status_code == 422
    assert message in str(response.json())
    assert versions(test_set) == 1


def test_a_stale_version_is_409(api, test_set):
    AgentTraceFactory(session_id="s")
    response = api.post(url(test_set), {"session_ids": ["s"], "version": 7}, format="json")
    assert response.status_code == 409
    assert versions(test_set) == 1
    response = api.post(url(test_set), {"session_ids": ["s"], "version": 1}, format="json")
    assert response.status_code == 201 and response.json()["version"] == 2


def test_a_trace_with_no_user_query_is_422(api, test_set):
    AgentTraceFactory(session_id="empty", user_query="   ")
    response = api.post(url(test_set), {"session_ids": ["empty"]}, format="json")
    assert response.status_code == 422 and "no user query" in response.json()["detail"]


def test_unicode_survives(api, test_set):
    AgentTraceFactory(session_id="ü-1", user_query="Où est ma commande ? 🚚")
    response = api.post(url(test_set), {"session_ids": ["ü-1"]}, format="json")
    assert response.status_code == 201
    (item,) = response.json()["items"][2:]
    assert item["inputs"]["message"] == "Où est ma commande ? 🚚" and item["source_session_id"] == "ü-1"


def test_unknown_test_set_is_404(api):
    response = api.post(
        "/api/v1/test-sets/00000000-0000-0000-0000-000000000000/items/from-traces",
        {"session_ids": ["a"]},
        format="json",
    )
    assert response.status_code == 404


def test_a_key_without_configure_is_refused(default_key_api, test_set):
    AgentTraceFactory(session_id="a")
    response = default_key_api.post(url(test_set), {"session_ids": ["a"]}, format="json")
    assert response.status_code == 403


def test_the_provenance_survives_a_put_that_sends_it_back(api, test_set):
    AgentTraceFactory(session_id="keep")
    body = api.post(url(test_set), {"session_ids": ["keep"]}, format="json").json()
    body["items"][2]["expected"]["expected_outcome"] = "edited"
    response = api.put(f"/api/v1/test-sets/{test_set['test_set_id']}", body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["items"][2]["source_session_id"] == "keep"
    assert response.json()["items"][2]["expected"]["expected_outcome"] == "edited"
