"""Tool and knowledge-base ids are chosen by the client and unique per project only: a bot of
another project that uses the same ids is another bot's, and nothing about it leaks through a
conflict (the ids used to be primary keys, so B's create answered 409 naming A's ids)."""

import pytest

from apps.bots.models import BotTool, KnowledgeBase
from apps.core.models import ProjectRole
from tests.bots.factories import bot_body
from tests.core.factories import ProjectFactory, project_key_client

pytestmark = pytest.mark.django_db

AGENT = "64f1c0ffee0000000000a0aa"
TOOL_ID, KB_ID = "64f1c0ffee0000000000b001", "64f1c0ffee0000000000c001"


@pytest.fixture
def apis():
    a, b = ProjectFactory(slug="alpha"), ProjectFactory(slug="beta")
    return (
        project_key_client(a, role=ProjectRole.ADMIN, username="alice"),
        project_key_client(b, role=ProjectRole.ADMIN, username="bob"),
    )


def body_with_ids(**overrides):
    body = bot_body(agent_id=AGENT, **overrides)
    body["tools"][0]["id"] = TOOL_ID
    body["knowledge_bases"][0]["id"] = KB_ID
    return body


def test_the_same_component_ids_in_two_projects_are_two_bots_components(apis):
    alpha, beta = apis
    assert alpha.post("/api/v1/bots", body_with_ids(), format="json").status_code == 201
    response = beta.post("/api/v1/bots", body_with_ids(name="Beta's bot"), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["tools"][0]["id"] == TOOL_ID
    assert response.json()["knowledge_bases"][0]["id"] == KB_ID
    assert BotTool.objects.filter(component_id=TOOL_ID).count() == 2

    # Beta edits its tool and drops its documents: alpha's stay as they were.
    body = body_with_ids(name="Beta's bot")
    body["tools"][0]["description"] = "beta's words"
    body["knowledge_bases"][0]["documents"] = [{"title": "Only beta", "text": "b"}]
    assert beta.put(f"/api/v1/bots/{AGENT}", body, format="json").status_code == 200
    alpha_bot = alpha.get(f"/api/v1/bots/{AGENT}").json()
    assert alpha_bot["tools"][0]["description"] == "Transfer"
    docs = alpha.get(f"/api/v1/bots/{AGENT}/knowledge-bases/{KB_ID}/documents").json()["documents"]
    assert [d["title"] for d in docs] == ["PTO", "Expenses"]
    docs = beta.get(f"/api/v1/bots/{AGENT}/knowledge-bases/{KB_ID}/documents").json()["documents"]
    assert [d["title"] for d in docs] == ["Only beta"]


def test_an_id_of_another_bot_in_the_same_project_is_still_a_conflict(apis):
    alpha, _ = apis
    assert alpha.post("/api/v1/bots", body_with_ids(), format="json").status_code == 201
    other = body_with_ids()
    other["agent_id"] = "64f1c0ffee0000000000a0ff"
    response = alpha.post("/api/v1/bots", other, format="json")
    assert response.status_code == 409
    assert TOOL_ID in response.json()["detail"]
    assert KnowledgeBase.objects.filter(component_id=KB_ID).count() == 1
