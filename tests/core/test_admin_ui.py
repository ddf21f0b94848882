"""Issue 15, points 8 and 10, on the admin: stacked collapsible inlines with type-dependent fields,
the tool type as a choice, the UI's names (bot, question set, RAG evaluation), restore behind a
confirmation and logged as a restore, history entries that say what a save published, and the
admin's launch form offering bots, test sets and rubrics by name.

Widths and heights are measured in the browser (tests/console/test_browser.py); here the pages'
structure is checked."""

import pytest
from django.contrib.admin.models import LogEntry

from apps.bots.models import BotTool
from apps.rubrics.models import RubricVersion
from apps.runs.forms import AdminRunLaunchForm, RunLaunchForm
from apps.testsets.models import TestSetVersion
from tests.admin_forms import admin_form_data
from tests.bots.factories import BotFactory, BotToolFactory
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import EvaluationRunFactory
from tests.testsets.factories import DatasetFactory, SuiteFactory

pytestmark = pytest.mark.django_db


def test_every_admin_page_loads_the_admin_stylesheet_and_script(admin_client):
    html = admin_client.get("/admin/").content.decode()
    assert "evalsite_admin/admin.css" in html and "evalsite_admin/admin.js" in html


def test_bot_tools_are_stacked_collapsible_rows_with_a_type_choice(admin_client):
    bot = BotFactory(tool_names=["search_kb"])
    BotToolFactory(bot=bot, tool_name="legacy", type="webhook")
    page = admin_client.get(f"/admin/bots/bot/{bot.pk}/change/")
    html = page.content.decode()
    assert 'id="tools-group"' in html and 'data-inline-type="stacked"' in html
    assert "evalsite-collapsible" in html
    tool_forms = page.context["inline_admin_formsets"][0].formset.forms
    choices = {f.instance.tool_name: dict(f.fields["type"].choices) for f in tool_forms}
    assert set(BotTool.Type.values) <= set(choices["search_kb"]) and "webhook" not in choices["search_kb"]
    # A type the API stored that the admin does not list is kept, not refused.
    assert "webhook" in choices["legacy"]
    data = admin_form_data(page)
    data["tools-0-type"] = "not-a-type"
    response = admin_client.post(f"/admin/bots/bot/{bot.pk}/change/", data)
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()


def test_rubric_rules_and_test_items_are_collapsible_stacked_inlines(admin_client):
    rubric = RubricFactory()
    test_set = SuiteFactory()
    for url in (f"/admin/rubrics/rubric/{rubric.pk}/change/", f"/admin/testsets/testset/{test_set.pk}/change/"):
        html = admin_client.get(url).content.decode()
        assert 'data-inline-type="stacked"' in html and "evalsite-collapsible" in html


def test_scenario_only_fields_are_marked_for_the_script(admin_client):
    test_set = SuiteFactory()
    html = admin_client.get(f"/admin/testsets/testset/{test_set.pk}/change/").content.decode()
    for name in ("persona", "initial_message", "max_turns", "scripted_turns"):
        assert (
            f'data-evalsite-show-for="scenario" name="items-0-{name}"' in html
            or f'name="items-0-{name}"' in html
            and html.count('data-evalsite-show-for="scenario"') >= 8
        )
    assert 'data-evalsite-show-for="single_turn"' in html


def test_ui_names_say_bot_question_set_and_rag_evaluation(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert "Question sets" in index and "Datasets" not in index
    assert "RAG evaluations" in index and "Trace evaluations" not in index
    rubric = RubricFactory()
    change = admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/change/").content.decode()
    assert '<label class="required" for="id_bot">Bot:</label>' in change
    bot_page = admin_client.get(f"/admin/bots/bot/{rubric.bot.pk}/change/").content.decode()
    assert "Bot id:" in bot_page
    EvaluationRunFactory(agent_id=rubric.bot.agent_id)
    runs = admin_client.get("/admin/runs/evaluationrun/").content.decode()
    assert "By bot" in runs and "By bot id" not in runs  # bots offered by name (BotNameFilter)


def test_restore_asks_for_confirmation_then_publishes_and_logs_a_restore(admin_client):
    rubric = RubricFactory(name="First")
    data = admin_form_data(admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/change/"))
    data["name"] = "Second"
    assert admin_client.post(f"/admin/rubrics/rubric/{rubric.pk}/change/", data).status_code == 302

    history = admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/").content.decode()
    restore_url = f"/admin/rubrics/rubric/{rubric.pk}/versions/1/restore/"
    assert f'href="{restore_url}"' in history and f'action="{restore_url}"' not in history

    confirm = admin_client.get(restore_url)
    html = confirm.content.decode()
    assert confirm.status_code == 200 and "Yes, restore v1" in html and "as a new version 3" in html
    assert '<span class="add">+  &quot;name&quot;: &quot;First&quot;,</span>' in html
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2

    assert admin_client.post(restore_url).status_code == 302
    assert RubricVersion.objects.get(rubric=rubric, version=3).snapshot["name"] == "First"
    entry = LogEntry.objects.filter(object_id=str(rubric.pk)).latest("action_time")
    assert entry.get_change_message() == "Restored version 1 as version 3."
    assert admin_client.get(f"/admin/rubrics/rubric/{rubric.pk}/versions/9/restore/").status_code == 404


def test_history_says_which_version_a_save_published_and_what_changed(admin_client):
    rubric = RubricFactory()
    url = f"/admin/rubrics/rubric/{rubric.pk}/change/"
    data = admin_form_data(admin_client.get(url))
    data["rules-1-severity"] = "low"
    data["rules-1-pass_conditions"] = "Names the handbook section"
    data["changelog"] = "Looser KB rule"
    assert admin_client.post(url, data).status_code == 302
    entry = LogEntry.objects.filter(object_id=str(rubric.pk)).latest("action_time")
    assert entry.get_change_message() == (
        "Published version 2: changed rubric rule USES_KB (Severity, Pass conditions)."
    )

    data = admin_form_data(admin_client.get(url))
    data["description"] = "New description"
    data["rules-0-DELETE"] = "on"
    admin_client.post(url, data)
    entry = LogEntry.objects.filter(object_id=str(rubric.pk)).latest("action_time")
    assert entry.get_change_message() == (
        "Published version 3: changed Description; deleted rubric rule BRIEF_RESPONSES."
    )

    admin_client.post(url, admin_form_data(admin_client.get(url)))
    entry = LogEntry.objects.filter(object_id=str(rubric.pk)).latest("action_time")
    assert entry.get_change_message() == "Saved; no new version was published (nothing changed)."


def test_test_set_restore_is_confirmed_and_logged_too(admin_client):
    test_set = SuiteFactory()
    data = admin_form_data(admin_client.get(f"/admin/testsets/testset/{test_set.pk}/change/"))
    data["items-1-max_turns"] = "4"
    admin_client.post(f"/admin/testsets/testset/{test_set.pk}/change/", data)
    entry = LogEntry.objects.filter(object_id=str(test_set.pk)).latest("action_time")
    assert entry.get_change_message() == "Published version 2: changed test item Carry-over chat (Max turns)."
    restore_url = f"/admin/testsets/testset/{test_set.pk}/versions/1/restore/"
    assert "Yes, restore v1" in admin_client.get(restore_url).content.decode()
    admin_client.post(restore_url)
    assert TestSetVersion.objects.filter(test_set=test_set).count() == 3
    entry = LogEntry.objects.filter(object_id=str(test_set.pk)).latest("action_time")
    assert entry.get_change_message() == "Restored version 1 as version 3."


def test_admin_and_console_launch_forms_share_the_choices():
    test_set = SuiteFactory(name="Onboarding")
    rubric = RubricFactory(bot=test_set.bot, name="Tone")
    dataset = DatasetFactory(name="Old questions")
    project = test_set.project
    admin_form, console_form = AdminRunLaunchForm(project=project), RunLaunchForm(project=project)
    assert isinstance(admin_form, RunLaunchForm)
    for form in (admin_form, console_form):
        assert dict(form.fields["agent_id"].choices)[test_set.bot.agent_id] == f"{test_set.bot.name} (demo)"
        # Grouped under their bot (the launch form offers only the chosen bot's).
        bot_group = f"{test_set.bot.name} ({test_set.bot.agent_id})"
        assert dict(dict(form.fields["test_set_id"].choices)[bot_group])[str(test_set.pk)] == "Onboarding (v1)"
        assert dict(dict(form.fields["rubric_id"].choices)[bot_group])[str(rubric.pk)] == "Tone (v1)"
    assert dict(admin_form.fields["dataset_id"].choices)[str(dataset.pk)] == "Old questions"
    assert console_form.fields["test_set_id"].required and not admin_form.fields["test_set_id"].required


def test_admin_launch_page_offers_choices_and_launches(admin_client):
    test_set = SuiteFactory(name="Onboarding")
    page = admin_client.get("/admin/runs/evaluationrun/launch/").content.decode()
    assert f'<option value="{test_set.pk}" data-bot="{test_set.bot.agent_id}">Onboarding (v1)</option>' in page
    assert f'<option value="{test_set.bot.agent_id}">' in page
    assert 'name="agent_id" maxlength' not in page


def _queries(client, url) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_query_counts_do_not_grow_with_rows(admin_client):
    from tests.bots.factories import BotFactory
    from tests.runs.factories import EvaluationRunFactory
    from tests.testsets.factories import ItemFactory

    small, large = SuiteFactory(items=ItemFactory.build_batch(5)), SuiteFactory(items=ItemFactory.build_batch(40))
    editor = "/admin/testsets/testset/{}/change/"
    admin_client.get(editor.format(small.pk))  # warm the caches (content types) a first request fills
    assert _queries(admin_client, editor.format(small.pk)) == _queries(admin_client, editor.format(large.pk))

    bot = BotFactory(tool_names=["a", "b"])
    admin_client.get(f"/admin/bots/bot/{bot.pk}/change/")
    few = _queries(admin_client, f"/admin/bots/bot/{bot.pk}/change/")
    for i in range(10):
        BotToolFactory(bot=bot, tool_name=f"more_{i}")
    assert _queries(admin_client, f"/admin/bots/bot/{bot.pk}/change/") == few

    EvaluationRunFactory.create_batch(2, agent_id=bot.agent_id)
    admin_client.get("/admin/runs/evaluationrun/")
    few = _queries(admin_client, "/admin/runs/evaluationrun/")
    EvaluationRunFactory.create_batch(20, agent_id=bot.agent_id)
    assert _queries(admin_client, "/admin/runs/evaluationrun/") == few
    assert _queries(admin_client, "/admin/runs/evaluationrun/launch/") <= 8
