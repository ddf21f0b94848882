import logging

import pytest

from apps.bots import selectors
from apps.bots.models import Bot
from apps.core.errors import NotFoundError
from tests.bots.factories import SECRET, BotFactory, KnowledgeDocumentFactory, bot_body
from tests.rubrics.factories import RubricFactory

pytestmark = pytest.mark.django_db


def test_create_get_and_context(api):
    response = api.post("/api/v1/bots", bot_body(), format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    agent_id = data["agent_id"]
    assert len(agent_id) == 24 and int(agent_id, 16) >= 0
    assert data["has_secret"] is True and "secret" not in data
    assert [t["tool_name"] for t in data["tools"]] == ["live_handoff", "search_kb"]
    assert data["knowledge_bases"][0]["document_count"] == 2

    context = api.get(f"/api/v1/bots/{agent_id}/context").json()
    assert set(context) == {
        "bot_id",
        "bot_name",
        "organization_id",
        "organization_name",
        "system_prompt",
        "llm_config",
        "tools",
        "knowledge_bases",
        "harness_context",
    }
    assert context["bot_id"] == agent_id and context["bot_name"] == "O'Connor Associate"
    assert context["llm_config"] == {"provider": "openai", "model": "gpt-4.1", "parameters": {"temperature": 0.3}}
    assert set(context["tools"][0]) == {"id", "name", "tool_name", "type", "description", "output_instructions"}
    assert len(context["tools"][0]["id"]) == 24
    assert set(context["knowledge_bases"][0]) == {"id", "name", "type", "document_count"}
    kb_id = context["knowledge_bases"][0]["id"]
    docs = api.get(f"/api/v1/bots/{agent_id}/knowledge-bases/{kb_id}/documents").json()
    assert [d["title"] for d in docs["documents"]] == ["PTO", "Expenses"]
    assert api.get("/api/v1/bots").json()[0]["agent_id"] == agent_id


def test_given_agent_id_is_kept_and_duplicate_is_409(api):
    body = bot_body(agent_id="64f1c0ffee0000000000d0aa")
    assert api.post("/api/v1/bots", body, format="json").json()["agent_id"] == "64f1c0ffee0000000000d0aa"
    response = api.post("/api/v1/bots", body, format="json")
    assert response.status_code == 409 and "already exists" in response.json()["detail"]


def test_secret_is_never_returned_nor_logged(api, staff_api, caplog, admin_client):
    caplog.set_level(logging.DEBUG)
    agent_id = api.post("/api/v1/bots", bot_body(), format="json").json()["agent_id"]
    pages = [
        api.get(f"/api/v1/bots/{agent_id}"),
        api.get("/api/v1/bots"),
        api.get(f"/api/v1/bots/{agent_id}/context"),
        api.put(f"/api/v1/bots/{agent_id}", bot_body(secret="another-secret-456"), format="json"),
        api.post("/api/v1/bots", bot_body(agent_id=agent_id), format="json"),
        admin_client.get(f"/admin/bots/bot/{Bot.objects.get(agent_id=agent_id).pk}/change/"),
        admin_client.get("/admin/bots/bot/"),
    ]
    for page in pages:
        assert page.status_code in (200, 409)
        assert SECRET.encode() not in page.content and b"another-secret-456" not in page.content
    assert SECRET not in caplog.text and "another-secret-456" not in caplog.text
    assert SECRET not in repr(Bot.objects.get(agent_id=agent_id)) and SECRET not in str(Bot.objects.get())
    assert Bot.objects.get(agent_id=agent_id).secret == "another-secret-456"


def test_update_keeps_secret_ids_and_documents_when_omitted(api):
    created = api.post("/api/v1/bots", bot_body(), format="json").json()
    agent_id = created["agent_id"]
    body = bot_body(
        name="Renamed",
        secret=None,
        tools=[{"name": "Search v2", "tool_name": "search_kb", "type": "knowledge_base"}],
        knowledge_bases=[{"name": "Handbook", "type": "file"}],
    )
    body.pop("secret")
    response = api.put(f"/api/v1/bots/{agent_id}", body, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["name"] == "Renamed" and data["has_secret"] is True
    old_search = next(t for t in created["tools"] if t["tool_name"] == "search_kb")
    assert data["tools"] == [{**old_search, "name": "Search v2"}]
    assert data["knowledge_bases"][0]["id"] == created["knowledge_bases"][0]["id"]
    assert data["knowledge_bases"][0]["document_count"] == 2
    assert Bot.objects.get().secret == SECRET
    cleared = api.put(f"/api/v1/bots/{agent_id}", {**body, "secret": ""}, format="json").json()
    assert cleared["has_secret"] is False


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"agent_id": "xyz"}, "agent_id"),
        ({"adapter": "grpc"}, "adapter"),
        ({"adapter": "http", "endpoint_url": ""}, "endpoint_url is required"),
        ({"endpoint_url": "ftp://x"}, "http"),
        ({"name": "  "}, "blank"),
        ({"name": 5}, "name"),
        ({"tools": [{"name": "a", "tool_name": "t"}, {"name": "b", "tool_name": "t"}]}, "duplicate tool_name"),
        ({"system_prompt": "nul\x00"}, "NUL"),
        ({"knowledge_bases": [{"name": "K", "documents": [{"title": "t"}]}]}, "text"),
    ],
)
def test_bad_input_is_422_and_writes_nothing(api, change, fragment):
    response = api.post("/api/v1/bots", bot_body(**change), format="json")
    assert response.status_code == 422
    assert fragment in str(response.json()["detail"])
    assert not Bot.objects.exists()


def test_unknown_bot_is_404(api, staff_api):
    for path in (
        "/api/v1/bots/64f1c0ffee0000000000dead",
        "/api/v1/bots/64f1c0ffee0000000000dead/context",
        "/api/v1/bots/64f1c0ffee0000000000dead/knowledge-bases/x/documents",
    ):
        response = api.get(path)
        assert response.status_code == 404
        assert "64f1c0ffee0000000000dead" in response.json()["detail"]
    assert api.put("/api/v1/bots/nope", bot_body(), format="json").status_code == 404
    assert staff_api.delete("/api/v1/bots/nope").status_code == 404


def test_delete_is_staff_only_and_protected_by_rubrics(api, staff_api):
    bot = BotFactory()
    agent_id = bot.agent_id
    assert api.delete(f"/api/v1/bots/{agent_id}").status_code == 403
    rubric_id = RubricFactory(bot=bot).rubric_id
    response = staff_api.delete(f"/api/v1/bots/{agent_id}")
    assert response.status_code == 409 and "rubrics" in response.json()["detail"]
    assert staff_api.delete(f"/api/v1/rubrics/{rubric_id}").status_code == 204
    assert staff_api.delete(f"/api/v1/bots/{agent_id}").status_code == 204
    assert not Bot.objects.exists()


def test_anonymous_is_refused(anon_api):
    assert anon_api.get("/api/v1/bots").status_code in (401, 403)


def test_bot_spec_data_for_the_run_engine():
    bot = BotFactory(tool_names=["search_kb", "live_handoff"], secret="s", llm_parameters={"temperature": 0.1})
    KnowledgeDocumentFactory(knowledge_base__bot=bot, knowledge_base__name="Handbook", title="PTO", text="15 days")
    spec = selectors.bot_spec_data(bot.agent_id, project=bot.project)
    assert set(spec) == {
        "agent_id",
        "name",
        "adapter",
        "system_prompt",
        "llm_provider",
        "llm_model",
        "llm_parameters",
        "endpoint_url",
        "secret",
        "tools",
        "documents",
    }
    assert spec["secret"] == "s" and spec["llm_parameters"] == {"temperature": 0.1}
    assert [t["tool_name"] for t in spec["tools"]] == ["search_kb", "live_handoff"]
    assert set(spec["tools"][0]) == {"tool_name", "name", "type", "description"}
    assert spec["documents"] == [{"knowledge_base": "Handbook", "title": "PTO", "text": "15 days"}]
    with pytest.raises(NotFoundError):
        selectors.bot_spec_data("64f1c0ffee0000000000dead", project=bot.project)
