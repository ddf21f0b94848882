import re

import pytest

from apps.rubrics import services
from apps.rubrics.models import Rubric, RubricRule, RubricVersion
from apps.rubrics.schemas import RubricContent
from tests.admin_forms import admin_form_data
from tests.bots.factories import BotFactory
from tests.rubrics.factories import RubricFactory, rubric_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def rubric():
    return RubricFactory(author="api")


def change_url(rubric):
    return f"/admin/rubrics/rubric/{rubric.pk}/change/"


def test_editor_shows_rules_with_conditions_one_per_line(admin_client, rubric):
    page = admin_client.get(change_url(rubric))
    assert page.status_code == 200
    html = page.content.decode()
    assert "BRIEF_RESPONSES" in html and "Under 3 sentences</textarea>" in html
    assert 'value="knowledge_base"' in html and "Version history" in html


def test_admin_save_publishes_a_version_through_the_service(admin_client, rubric):
    data = admin_form_data(admin_client.get(change_url(rubric)))
    data["rules-0-pass_conditions"] = "Under 3 sentences\nNo filler words"
    data["rules-1-severity"] = "low"
    data["changelog"] = "Looser KB rule"
    response = admin_client.post(change_url(rubric), data)
    assert response.status_code == 302, response.context["errors"] if response.context else response
    version = RubricVersion.objects.get(rubric=rubric, version=2)
    assert version.changelog == "Looser KB rule" and version.author == "admin"
    rules = version.snapshot["rules"]
    assert rules[0]["evaluation_criteria"]["pass_conditions"] == ["Under 3 sentences", "No filler words"]
    assert rules[1]["severity"] == "low"
    assert RubricRule.objects.get(rubric=rubric, rule_id="USES_KB").severity == "low"

    # Saving again without changes publishes nothing.
    data = admin_form_data(admin_client.get(change_url(rubric)))
    assert admin_client.post(change_url(rubric), data).status_code == 302
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2


def test_admin_reorders_and_deletes_rules(admin_client, rubric):
    data = admin_form_data(admin_client.get(change_url(rubric)))
    data["rules-0-position"] = "5"
    data["rules-1-position"] = "1"
    admin_client.post(change_url(rubric), data)
    assert [r["id"] for r in RubricVersion.objects.get(rubric=rubric, version=2).snapshot["rules"]] == [
        "USES_KB",
        "BRIEF_RESPONSES",
    ]
    data = admin_form_data(admin_client.get(change_url(rubric)))
    data["rules-0-DELETE"] = "on"
    admin_client.post(change_url(rubric), data)
    assert [r["id"] for r in RubricVersion.objects.get(rubric=rubric, version=3).snapshot["rules"]] == [
        "BRIEF_RESPONSES"
    ]


def test_admin_refuses_invalid_and_stale_edits(admin_client, rubric):
    data = admin_form_data(admin_client.get(change_url(rubric)))
    bad = {**data, "rules-1-rule_id": "BRIEF_RESPONSES"}
    response = admin_client.post(change_url(rubric), bad)
    assert response.status_code == 200 and RubricVersion.objects.filter(rubric=rubric).count() == 1
    # Someone else publishes while this editor has the page open.
    services.rubric_publish_version(
        rubric=rubric, content=RubricContent.model_validate(rubric_body(rubric.bot.agent_id, name="Elsewhere"))
    )
    response = admin_client.post(change_url(rubric), {**data, "name": "Mine"})
    assert response.status_code == 200 and b"Reload the page" in response.content
    assert Rubric.objects.get().name == "Elsewhere"


def test_admin_add_creates_version_one(admin_client):
    bot = BotFactory()
    page = admin_client.get("/admin/rubrics/rubric/add/")
    data = admin_form_data(page)
    data.update(
        {
            "bot": bot.pk,
            "name": "New rubric",
            "severity_high": "Critical",
            "rules-TOTAL_FORMS": "1",
            "rules-0-rule_id": "R1",
            "rules-0-name": "Rule one",
            "rules-0-severity": "high",
            "rules-0-position": "0",
            "rules-0-component_scope": "function",
            "rules-0-fail_conditions": "Calls the wrong tool",
        }
    )
    response = admin_client.post("/admin/rubrics/rubric/add/", data)
    assert response.status_code == 302
    rubric = Rubric.objects.get(name="New rubric")
    version = RubricVersion.objects.get(rubric=rubric)
    assert version.version == 1 and version.snapshot["severity_definitions"] == {"high": "Critical"}
    assert version.snapshot["rules"][0]["evaluation_criteria"]["fail_conditions"] == ["Calls the wrong tool"]


def test_version_history_diff_and_restore(admin_client, rubric):
    services.rubric_publish_version(
        rubric=rubric,
        content=RubricContent.model_validate(rubric_body(rubric.bot.agent_id, name="Second name")),
        changelog="rename",
    )
    history = admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/?a=1&b=2")
    assert history.status_code == 200
    html = history.content.decode()
    assert '<span class="remove">-  &quot;name&quot;: &quot;Support rubric&quot;,</span>' in html
    assert '<span class="add">+  &quot;name&quot;: &quot;Second name&quot;,</span>' in html
    assert "rename" in html and "Restore v1" in html

    response = admin_client.post(f"/admin/rubrics/rubric/{rubric.pk}/versions/1/restore/")
    assert response.status_code == 302
    v3 = RubricVersion.objects.get(rubric=rubric, version=3)
    assert v3.snapshot["name"] == "Support rubric" and v3.changelog == "Restored version 1"
    assert Rubric.objects.get().name == "Support rubric"
    # GET asks to confirm (see tests/core/test_admin_ui.py); it publishes nothing.
    assert admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/1/restore/").status_code == 200
    assert RubricVersion.objects.filter(rubric=rubric).count() == 3
    missing = admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/?a=1&b=9")
    assert b"No version 9" in missing.content


def test_publish_refused_after_the_form_checks_is_not_reported_as_saved(admin_client, rubric, monkeypatch):
    """Someone publishes between the form's version check and the save: the service refuses with a
    409-style conflict, and the admin must not also say (or log) that the change was saved."""
    from django.contrib.admin.models import LogEntry

    real_publish = services.rubric_publish_version

    def publish_after_someone_else(**kwargs):
        real_publish(
            rubric=kwargs["rubric"],
            content=RubricContent.model_validate(rubric_body(rubric.bot.agent_id, name="Elsewhere")),
        )
        return real_publish(**kwargs)

    monkeypatch.setattr(services, "rubric_publish_version", publish_after_someone_else)
    data = admin_form_data(admin_client.get(change_url(rubric)))
    response = admin_client.post(change_url(rubric), {**data, "name": "Mine"}, follow=True)
    shown = [(m.level_tag, str(m)) for m in response.context["messages"]]
    assert [level for level, _ in shown] == ["error"], shown
    assert "Not saved" in shown[0][1] and "version 2" in shown[0][1]
    assert Rubric.objects.get().name == "Elsewhere"
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2
    assert not LogEntry.objects.exists()


def test_version_diff_names_the_rule_that_changed(admin_client, rubric):
    data = admin_form_data(admin_client.get(change_url(rubric)))
    data["rules-0-severity"] = "high"  # BRIEF_RESPONSES, medium until now
    data["rules-0-pass_conditions"] = "Under 3 sentences\nNo filler words"
    data["rules-1-DELETE"] = "on"  # USES_KB
    data["changelog"] = "Stricter brevity"
    assert admin_client.post(change_url(rubric), data).status_code == 302
    html = admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/?a=1&b=2").content.decode()
    assert (
        "<li>Rule BRIEF_RESPONSES (Brief, Focused Responses): severity medium → high; pass conditions changed (+1)</li>"
    ) in html
    assert "<li>Rule USES_KB (" in html and " removed</li>" in html
    # Restoring version 1 says, rule by rule, what it would change back.
    confirm = admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/1/restore/").content.decode()
    assert "<li>Rule BRIEF_RESPONSES (Brief, Focused Responses): severity high → medium; " in confirm
    assert re.search(r"<li>Rule USES_KB \([^<]*\) added \((high|medium|low) severity\)</li>", confirm)


def test_version_changes_in_words():
    from apps.rubrics.selectors import rubric_version_changes

    old = {
        "name": "Support",
        "severity_definitions": {"high": "Blocks"},
        "rules": [
            {"id": "A", "name": "Alpha", "severity": "low", "description": "short"},
            {"id": "B", "name": "Beta", "severity": "high", "examples": {"correct": "x"}},
        ],
    }
    new = {
        "name": "Support v2",
        "severity_definitions": {"high": "Blocks release"},
        "rules": [
            {"id": "B", "name": "Beta", "severity": "high", "examples": {"correct": "y" * 80}},
            {"id": "A", "name": "Alpha renamed", "severity": "low", "description": "short"},
            {"id": "C", "name": "Gamma", "severity": "medium"},
        ],
    }
    assert rubric_version_changes(old, new) == [
        "Rubric name: Support → Support v2",
        "Severity high definition: Blocks → Blocks release",
        "Rule B (Beta): correct example changed",
        "Rule A (Alpha renamed): name Alpha → Alpha renamed",
        "Rule C (Gamma) added (medium severity)",
        "Rules reordered: B, A",
    ]
    assert rubric_version_changes(old, old) == []
