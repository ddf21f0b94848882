import json

import pytest

from apps.core.errors import NotFoundError
from apps.core.models import Project
from apps.rubrics.models import Rubric, RubricRule, RubricVersion
from apps.rubrics.selectors import rubric_version_snapshot
from tests.bots.factories import BotFactory
from tests.rubrics.factories import RubricFactory, rubric_body

pytestmark = pytest.mark.django_db
RUBRIC_KEYS = {
    "rubric_id",
    "agent_id",
    "version",
    "name",
    "description",
    "severity_definitions",
    "rules",
    "created_at",
    "updated_at",
}
RULE_KEYS = {
    "id",
    "name",
    "severity",
    "category",
    "description",
    "prompt_reference",
    "evaluation_criteria",
    "examples",
    "component_scope",
    "component_ids",
    "component_names",
}


@pytest.fixture
def bot():
    return BotFactory(tool_names=["search_kb"])


@pytest.fixture
def rubric(api, bot):
    response = api.post("/api/v1/rubrics", rubric_body(bot.agent_id), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_is_version_one_in_the_contract_shape(api, bot, rubric):
    assert set(rubric) == RUBRIC_KEYS and rubric["version"] == 1
    assert set(rubric["rules"][0]) == RULE_KEYS
    assert rubric["rules"][0]["evaluation_criteria"] == {
        "pass_conditions": ["Under 3 sentences"],
        "fail_conditions": ["Filler"],
    }
    assert rubric["rules"][1]["examples"] == {"violation": "", "correct": ""}
    got = api.get(f"/api/v1/rubrics/{rubric['rubric_id']}")
    assert got.status_code == 200 and got.json() == rubric and got["ETag"] == '"v1"'
    assert list(RubricRule.objects.values_list("rule_id", flat=True)) == ["BRIEF_RESPONSES", "USES_KB"]
    version = RubricVersion.objects.get()
    assert version.version == 1 and version.author == "api-user" and version.changelog == "Created"


def test_put_publishes_new_version_and_keeps_old(api, bot, rubric):
    rid = rubric["rubric_id"]
    body = rubric_body(bot.agent_id, name="Renamed", version=1, changelog="Rename")
    body["rules"] = list(reversed(body["rules"]))
    response = api.put(f"/api/v1/rubrics/{rid}", body, format="json")
    assert response.status_code == 200 and response.json()["version"] == 2 and response["ETag"] == '"v2"'
    assert [r["id"] for r in response.json()["rules"]] == ["USES_KB", "BRIEF_RESPONSES"]
    versions = api.get(f"/api/v1/rubrics/{rid}/versions").json()
    assert [(v["version"], v["changelog"], v["rule_count"]) for v in versions] == [(2, "Rename", 2), (1, "Created", 2)]
    v1 = api.get(f"/api/v1/rubrics/{rid}/versions/1").json()
    assert v1["name"] == "Support rubric" and v1["version"] == 1 and v1["changelog"] == "Created"
    assert api.get(f"/api/v1/rubrics/{rid}").json()["name"] == "Renamed"
    # The run engine's view of the same data.
    assert rubric_version_snapshot(rid, 1, project=Project.objects.default())[1]["name"] == "Support rubric"
    number, latest = rubric_version_snapshot(rid, None, project=Project.objects.default())
    assert number == 2 and set(latest) == RUBRIC_KEYS and latest["version"] == 2


def test_put_that_changes_nothing_publishes_nothing(api, bot, rubric):
    rid = rubric["rubric_id"]
    # What GET returned, sent back as is (timestamps and all).
    response = api.put(f"/api/v1/rubrics/{rid}", rubric, format="json")
    assert response.status_code == 200 and response.json()["version"] == 1
    assert RubricVersion.objects.count() == 1


def test_stale_put_is_409_by_body_version_or_if_match(api, bot, rubric):
    rid = rubric["rubric_id"]
    assert (
        api.put(f"/api/v1/rubrics/{rid}", rubric_body(bot.agent_id, name="A", version=1), format="json").status_code
        == 200
    )
    stale = api.put(f"/api/v1/rubrics/{rid}", rubric_body(bot.agent_id, name="B", version=1), format="json")
    assert stale.status_code == 409 and "version 2" in stale.json()["detail"]
    stale = api.put(f"/api/v1/rubrics/{rid}", rubric_body(bot.agent_id, name="B"), format="json", HTTP_IF_MATCH='"v1"')
    assert stale.status_code == 409
    fresh = api.put(f"/api/v1/rubrics/{rid}", rubric_body(bot.agent_id, name="B"), format="json", HTTP_IF_MATCH='"v2"')
    assert fresh.status_code == 200 and fresh.json()["version"] == 3
    assert api.get(f"/api/v1/rubrics/{rid}").json()["name"] == "B"
    bad = api.put(f"/api/v1/rubrics/{rid}", rubric_body(bot.agent_id), format="json", HTTP_IF_MATCH="garbage")
    assert bad.status_code == 422


def test_list_by_agent(api, bot, rubric):
    other = BotFactory()
    RubricFactory(bot=other, name="Other")
    assert [r["name"] for r in api.get(f"/api/v1/rubrics?agent_id={bot.agent_id}").json()] == ["Support rubric"]
    assert len(api.get("/api/v1/rubrics").json()) == 2
    assert api.get("/api/v1/rubrics?agent_id=64f1c0ffee0000000000dead").status_code == 404


def _rule(**change):
    rule = {"id": "R1", "name": "Rule", "severity": "high"}
    rule.update(change)
    return rule


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"rules": [_rule(severity="critical")]}, "severity"),
        ({"rules": [_rule(component_scope="database")]}, "component_scope"),
        ({"rules": [_rule(), _rule()]}, "duplicate rule id: R1"),
        ({"rules": [_rule(id="has space")]}, "id"),
        ({"rules": [_rule(evaluation_criteria={"pass_conditions": "not a list"})]}, "pass_conditions"),
        ({"rules": [{"id": "R1", "severity": "high"}]}, "name"),
        ({"agent_id": "64f1c0ffee0000000000dead"}, "does not name a bot"),
        ({"agent_id": "nope"}, "agent_id"),
        ({"name": ""}, "name"),
        ({"severity_definitions": {"urgent": "x"}}, "severity_definitions"),
        ({"description": "\ud800"}, "surrogate"),
    ],
)
def test_bad_input_is_422_and_writes_nothing(api, bot, change, fragment):
    # json.dumps escapes a lone surrogate as \ud800, which is how a client would send one.
    response = api.post(
        "/api/v1/rubrics", json.dumps({**rubric_body(bot.agent_id), **change}), content_type="application/json"
    )
    assert response.status_code == 422, response.json()
    assert fragment in str(response.json()["detail"])
    assert not Rubric.objects.exists() and not RubricVersion.objects.exists()


def test_bad_put_writes_nothing(api, bot, rubric):
    rid = rubric["rubric_id"]
    response = api.put(f"/api/v1/rubrics/{rid}", rubric_body(bot.agent_id, rules=[_rule(), _rule()]), format="json")
    assert response.status_code == 422
    assert RubricVersion.objects.count() == 1 and RubricRule.objects.count() == 2


def test_unknown_ids_are_404(api, staff_api, bot, rubric):
    unknown = "00000000-0000-0000-0000-000000000000"
    for path in (
        f"/api/v1/rubrics/{unknown}",
        f"/api/v1/rubrics/{unknown}/versions",
        "/api/v1/rubrics/not-a-uuid",
        f"/api/v1/rubrics/{rubric['rubric_id']}/versions/7",
    ):
        assert api.get(path).status_code == 404
    assert api.put(f"/api/v1/rubrics/{unknown}", rubric_body(bot.agent_id), format="json").status_code == 404
    assert staff_api.delete(f"/api/v1/rubrics/{unknown}").status_code == 404
    with pytest.raises(NotFoundError):
        rubric_version_snapshot(rubric["rubric_id"], 9, project=Project.objects.default())
    with pytest.raises(NotFoundError):
        rubric_version_snapshot(unknown, None, project=Project.objects.default())


def test_delete_is_staff_only(api, staff_api, rubric):
    rid = rubric["rubric_id"]
    assert api.delete(f"/api/v1/rubrics/{rid}").status_code == 403
    assert staff_api.delete(f"/api/v1/rubrics/{rid}").status_code == 204
    assert api.get(f"/api/v1/rubrics/{rid}").status_code == 404
    assert not RubricVersion.objects.exists()


def test_nulls_are_accepted_as_empty(api, bot):
    body = rubric_body(
        bot.agent_id,
        description=None,
        rules=[_rule(examples=None, evaluation_criteria=None, component_scope=None, component_ids=None, category=None)],
    )
    response = api.post("/api/v1/rubrics", body, format="json")
    assert response.status_code == 201
    assert response.json()["rules"][0]["evaluation_criteria"] == {"pass_conditions": [], "fail_conditions": []}


def test_list_query_count_does_not_grow_with_rubrics(api, bot, django_assert_max_num_queries):
    for n in range(6):
        RubricFactory(bot=bot, name=f"R{n}")
    with django_assert_max_num_queries(6):
        assert len(api.get("/api/v1/rubrics").json()) == 6
