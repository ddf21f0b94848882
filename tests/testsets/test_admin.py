import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.testsets import services
from apps.testsets.models import TestItem, TestSet, TestSetVersion
from apps.testsets.schemas import TestSetContent
from tests.admin_forms import admin_form_data
from tests.bots.factories import BotFactory
from tests.testsets.factories import SuiteFactory, make_test_set_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def test_set():
    return SuiteFactory(bot=BotFactory(tool_names=["search_kb", "live_handoff"]))


def change_url(test_set):
    return f"/admin/testsets/testset/{test_set.pk}/change/"


def test_admin_save_publishes_a_version_and_keeps_item_ids(admin_client, test_set):
    ids = list(TestItem.objects.filter(test_set=test_set).values_list("item_id", flat=True))
    page = admin_client.get(change_url(test_set))
    assert page.status_code == 200 and b"How many days carry over?" in page.content
    data = admin_form_data(page)
    data["items-1-scripted_turns"] = "First\nSecond\nThird"
    data["items-0-should_use_tools"] = "search_kb\nunknown_tool"
    data["changelog"] = "More turns"
    response = admin_client.post(change_url(test_set), data, follow=True)
    assert response.status_code == 200
    assert b"unknown_tool" in response.content  # the warning is shown, the save went through
    version = TestSetVersion.objects.get(test_set=test_set, version=2)
    assert version.changelog == "More turns" and version.author == "admin"
    assert version.snapshot["items"][1]["inputs"]["scripted_turns"] == ["First", "Second", "Third"]
    assert [item["item_id"] for item in version.snapshot["items"]] == [str(i) for i in ids]


def test_admin_refuses_a_scenario_without_persona(admin_client, test_set):
    data = admin_form_data(admin_client.get(change_url(test_set)))
    data["items-1-persona"] = ""
    response = admin_client.post(change_url(test_set), data)
    assert response.status_code == 200 and b"needs inputs.persona" in response.content
    assert TestSetVersion.objects.filter(test_set=test_set).count() == 1


def test_admin_export_and_import(admin_client, test_set):
    exported = admin_client.get(f"/admin/testsets/testset/{test_set.pk}/export/jsonl/")
    assert exported.status_code == 200
    lines = exported.content.decode().splitlines()
    edited = json.loads(lines[0])
    edited["priority"] = "low"
    upload = SimpleUploadedFile("set.jsonl", ("\n".join([json.dumps(edited), lines[1]]) + "\n").encode())
    response = admin_client.post(f"/admin/testsets/testset/{test_set.pk}/import/", {"file": upload, "format": "jsonl"})
    assert response.status_code == 302
    assert TestSetVersion.objects.get(test_set=test_set, version=2).snapshot["items"][0]["priority"] == "low"

    csv_file = admin_client.get(f"/admin/testsets/testset/{test_set.pk}/export/csv/").content
    assert admin_client.get("/admin/testsets/testset/import/").status_code == 200
    response = admin_client.post(
        "/admin/testsets/testset/import/",
        {
            "file": SimpleUploadedFile("set.csv", csv_file),
            "format": "csv",
            "bot": test_set.bot.pk,
            "name": "From CSV",
        },
    )
    assert response.status_code == 302
    copy = TestSet.objects.get(name="From CSV")
    assert (
        TestSetVersion.objects.get(test_set=copy).snapshot["items"]
        == TestSetVersion.objects.get(test_set=test_set, version=2).snapshot["items"]
    )

    bad = admin_client.post(
        "/admin/testsets/testset/import/",
        {
            "file": SimpleUploadedFile("x.csv", b"type,name\nsingle_turn,a\n"),
            "format": "csv",
            "bot": test_set.bot.pk,
            "name": "Bad",
        },
    )
    assert bad.status_code == 200 and b"needs inputs.message" in bad.content
    assert not TestSet.objects.filter(name="Bad").exists()
    assert b"Import from a file" in admin_client.get("/admin/testsets/testset/").content


def test_history_and_restore(admin_client, test_set):
    content = make_test_set_payload(test_set.bot.agent_id, name="Renamed")
    services.testset_publish_version(test_set=test_set, content=TestSetContent.model_validate(content))
    page = admin_client.get(f"/admin/testsets/testset/{test_set.pk}/versions/")
    assert page.status_code == 200 and b"&quot;Renamed&quot;" in page.content
    admin_client.post(f"/admin/testsets/testset/{test_set.pk}/versions/1/restore/")
    assert TestSet.objects.get(pk=test_set.pk).name == "Support test set"
    assert TestSet.objects.get(pk=test_set.pk).current_version == 3


def test_publish_refused_after_the_form_checks_is_not_reported_as_saved(admin_client, test_set, monkeypatch):
    from django.contrib.admin.models import LogEntry

    real_publish = services.testset_publish_version

    def publish_after_someone_else(**kwargs):
        real_publish(
            test_set=kwargs["test_set"],
            content=TestSetContent.model_validate(make_test_set_payload(test_set.bot.agent_id, name="Elsewhere")),
        )
        return real_publish(**kwargs)

    monkeypatch.setattr(services, "testset_publish_version", publish_after_someone_else)
    data = admin_form_data(admin_client.get(change_url(test_set)))
    response = admin_client.post(change_url(test_set), {**data, "name": "Mine"}, follow=True)
    shown = [(m.level_tag, str(m)) for m in response.context["messages"]]
    assert [level for level, _ in shown] == ["error"], shown
    assert "Not saved" in shown[0][1]
    assert TestSet.objects.get(pk=test_set.pk).name == "Elsewhere"
    assert not LogEntry.objects.exists()
