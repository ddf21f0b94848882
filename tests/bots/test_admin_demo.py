import pytest

from apps.bots.demo import DEMO_AGENT_ID
from apps.bots.models import Bot, KnowledgeDocument
from apps.bots.selectors import bot_spec_data
from apps.core.models import Project
from apps.rubrics.demo import DEMO_RUBRIC_ID
from apps.rubrics.selectors import rubric_version_snapshot
from apps.runs.demo import load_demo_evaluation_data
from apps.testsets.demo import DEMO_DATASET_ID, DEMO_TEST_SET_ID
from apps.testsets.selectors import dataset_questions, testset_version_items
from tests.admin_forms import admin_form_data

pytestmark = pytest.mark.django_db


def test_demo_data_is_complete_and_idempotent():
    assert load_demo_evaluation_data() == 4
    assert load_demo_evaluation_data() == 0
    spec = bot_spec_data(DEMO_AGENT_ID, project=Project.objects.default())
    assert spec["adapter"] == "demo"
    assert {(t["tool_name"], t["type"]) for t in spec["tools"]} == {
        ("search_kb", "knowledge_base"),
        ("live_handoff", "human_handoff"),
    }
    assert [d["title"] for d in spec["documents"]] == ["PTO Policy", "Expense Policy", "Remote Work Policy"]
    assert all(d["knowledge_base"] == "O'Connor Employee Handbook" for d in spec["documents"])
    assert all(d["text"].count("\n\n") >= 2 for d in spec["documents"])
    _, rubric = rubric_version_snapshot(DEMO_RUBRIC_ID, None, project=Project.objects.default())
    assert {r["component_scope"] for r in rubric["rules"]} == {"prompt", "knowledge_base", "function", "general"}
    assert {r["severity"] for r in rubric["rules"]} == {"high", "medium", "low"}
    _, items = testset_version_items(DEMO_TEST_SET_ID, None, project=Project.objects.default())
    assert {i["type"] for i in items} == {"single_turn", "scenario"}
    assert all(i["inputs"].get("scripted_turns") for i in items if i["type"] == "scenario")
    assert len(dataset_questions(DEMO_DATASET_ID, project=Project.objects.default())) == 3


def test_seed_demo_command_loads_it(capsys):
    from django.core.management import call_command

    call_command("seed_demo")
    assert Bot.objects.filter(agent_id=DEMO_AGENT_ID).exists()
    assert "bot, rubric, test set and question set: 4 new" in capsys.readouterr().out


def test_bot_admin_secret_is_write_only(admin_client):
    load_demo_evaluation_data()
    bot = Bot.objects.get(agent_id=DEMO_AGENT_ID)
    bot.secret = "admin-hidden-secret"
    bot.save()
    url = f"/admin/bots/bot/{bot.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    assert b"admin-hidden-secret" not in page.content and b"set (hidden)" in page.content
    assert b"search_kb" in page.content and b"O&#x27;Connor Employee Handbook" in page.content

    data = admin_form_data(page)
    data["name"] = "Renamed bot"
    assert admin_client.post(url, data).status_code == 302
    bot.refresh_from_db()
    assert bot.name == "Renamed bot" and bot.secret == "admin-hidden-secret"

    data = admin_form_data(admin_client.get(url))
    data["secret"] = "replacement"
    admin_client.post(url, data)
    bot.refresh_from_db()
    assert bot.secret == "replacement"
    data = admin_form_data(admin_client.get(url))
    data["clear_secret"] = "on"
    admin_client.post(url, data)
    bot.refresh_from_db()
    assert bot.secret == ""

    kb = KnowledgeDocument.objects.first().knowledge_base
    kb_page = admin_client.get(f"/admin/bots/knowledgebase/{kb.pk}/change/")
    assert kb_page.status_code == 200 and b"PTO Policy" in kb_page.content
    assert admin_client.get("/admin/bots/bot/").status_code == 200
    assert admin_client.get("/admin/rubrics/rubric/").status_code == 200
    assert admin_client.get("/admin/testsets/dataset/").status_code == 200
    assert admin_client.get("/admin/testsets/testsetversion/").status_code == 200
