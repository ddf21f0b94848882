"""The console's "Add to test set": from the trace list (several at once), a trace page and a queue
review, an editor chooses a test set, writes what each trace should have done, and publishes a new
version whose items link back to their traces (in the admin's test set editor too)."""

import pytest

from apps.core.models import Project, ProjectRole
from apps.testsets import services
from apps.testsets.models import TestItem, TestSet
from apps.testsets.schemas import TestSetContent
from tests.bots.factories import BotFactory
from tests.console.test_projects import member_client
from tests.testsets.factories import make_test_set_payload
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db
PAGE = "/console/test-sets/from-traces/"


@pytest.fixture
def test_set():
    project = Project.objects.default()
    bot = BotFactory(project=project, tool_names=["search_kb"])
    content = TestSetContent.model_validate(make_test_set_payload(bot.agent_id))
    return services.testset_create(content=content, project=project)


@pytest.fixture
def traces():
    return [
        AgentTraceFactory(session_id="prod/1", user_query="Reset my VPN token", final_response="Try turning it off"),
        AgentTraceFactory(session_id="prod-2", user_query="Why was I charged twice?"),
    ]


def editor(client):
    return member_client(client, Project.objects.default(), ProjectRole.EDITOR)


def test_the_page_shows_each_trace_with_its_fields_and_publishes_a_version(client, test_set, traces):
    editor(client)
    page = client.get(PAGE, {"session_id": ["prod/1", "prod-2"]})
    assert page.status_code == 200
    html = page.content.decode()
    assert "Reset my VPN token" in html and "Why was I charged twice?" in html
    assert "Try turning it off" in html, "what the agent answered, beside the field for what it should have"
    assert f"{test_set.name} — " in html
    response = client.post(
        PAGE,
        {
            "test_set": str(test_set.pk),
            "session_id": ["prod/1", "prod-2"],
            "expected_outcome_0": "Explains how to reset the token",
            "success_criteria_0": "Names the self-service portal\n\nDoes not blame the user",
            "expected_outcome_1": "",
            "success_criteria_1": "",
            "changelog": "",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"/admin/testsets/testset/{test_set.pk}/change/"
    test_set.refresh_from_db()
    assert test_set.current_version == 2
    made = TestItem.objects.filter(test_set=test_set).exclude(source_session_id=None).order_by("position")
    assert [i.source_session_id for i in made] == ["prod/1", "prod-2"]
    assert made[0].expected_outcome == "Explains how to reset the token"
    assert made[0].success_criteria == ["Names the self-service portal", "Does not blame the user"]


def test_an_unknown_or_foreign_session_publishes_nothing(client, test_set, traces):
    editor(client)
    AgentTraceFactory(session_id="theirs", project=Project.objects.create(name="Other", slug="other"))
    page = client.get(PAGE, {"session_id": ["prod-2", "theirs"]}).content.decode()
    assert 'id="missing-traces"' in page and "<code>theirs</code>" in page
    assert 'id="publish-from-traces" disabled' in page
    response = client.post(PAGE, {"test_set": str(test_set.pk), "session_id": ["prod-2", "theirs"]})
    assert response.status_code == 200
    test_set.refresh_from_db()
    assert test_set.current_version == 1


def test_a_trace_already_in_the_test_set_is_an_error_on_the_form(client, test_set, traces):
    editor(client)
    body = {"test_set": str(test_set.pk), "session_id": ["prod-2"]}
    assert client.post(PAGE, body).status_code == 302
    again = client.post(PAGE, body)
    assert again.status_code == 200
    assert "Already in the test set" in again.content.decode()
    assert TestSet.objects.get(pk=test_set.pk).current_version == 2


def test_a_viewer_and_a_reviewer_are_refused(client, test_set, traces):
    member_client(client, Project.objects.default(), ProjectRole.REVIEWER)
    assert client.get(PAGE, {"session_id": ["prod-2"]}).status_code == 403
    assert client.post(PAGE, {"test_set": str(test_set.pk), "session_id": ["prod-2"]}).status_code == 403
    assert TestSet.objects.get(pk=test_set.pk).current_version == 1
    list_page = client.get("/console/traces/").content.decode()
    assert 'id="bulk-test-set"' not in list_page
    assert 'id="add-to-test-set"' not in client.get("/console/traces/prod-2/").content.decode()


def test_the_trace_list_and_the_trace_page_lead_to_it(client, test_set, traces):
    editor(client)
    list_page = client.get("/console/traces/").content.decode()
    assert 'id="bulk-test-set"' in list_page
    assert 'name="session_id" value="prod/1" form="bulk-test-set"' in list_page
    # A session id with a slash: the page once answered 500 building its API link.
    response = client.get("/console/traces/prod/1/")
    assert response.status_code == 200
    trace_page = response.content.decode()
    assert 'href="/console/test-sets/from-traces/?session_id=prod%2F1"' in trace_page


def test_no_test_set_yet_says_where_to_make_one(client, traces):
    editor(client)
    page = client.get(PAGE, {"session_id": ["prod-2"]}).content.decode()
    assert 'id="no-test-sets"' in page


def test_the_admin_editor_links_the_item_to_its_trace_and_a_save_keeps_it(admin_client, test_set, traces):
    services.testset_items_from_traces(
        test_set=test_set, requests=[services.FromTraceIn(session_id="prod/1")], author="t"
    )
    page = admin_client.get(f"/admin/testsets/testset/{test_set.pk}/change/").content.decode()
    assert 'trace <a href="/console/traces/prod/1/">prod/1</a>' in page


def test_a_run_result_becomes_an_item_with_its_transcript_and_a_link_back(client, test_set, demo_run):
    """A scenario result from the demo run: the user's turns of its transcript are the new item's
    conversation; its expectations start from the item it ran; it keeps source_result_id."""
    editor(client)
    result = demo_run.results.filter(item_type="scenario").first()
    assert 'id="result-add-to-test-set"' in client.get(f"/console/results/{result.result_id}/").content.decode()
    page = client.get(PAGE, {"result_id": str(result.result_id)})
    assert page.status_code == 200
    expected = (result.item.get("expected") or {}).get("expected_outcome", "")
    assert expected and expected in page.content.decode(), "the item's own expected outcome, to edit"
    response = client.post(
        PAGE,
        {
            "test_set": str(test_set.pk),
            "result_id": str(result.result_id),
            "expected_outcome_0": "Gives the carry-over rule",
            "success_criteria_0": "Says 5 days",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    item = TestItem.objects.get(test_set=test_set, source_result_id=result.result_id)
    users = [m["content"] for m in result.output["messages"] if m["role"] == "user" and m.get("content")]
    assert item.type == "scenario"
    assert [item.initial_message, *item.scripted_turns] == users
    assert (item.expected_outcome, item.success_criteria) == ("Gives the carry-over rule", ["Says 5 days"])
    admin_page = client.get(f"/admin/testsets/testset/{test_set.pk}/change/")
    assert f'href="/console/results/{result.result_id}/"' in admin_page.content.decode()


def test_another_projects_result_is_not_found_here(client, test_set, demo_run):
    other = Project.objects.create(name="Other", slug="other")
    member_client(client, other, ProjectRole.EDITOR)
    result = demo_run.results.first()
    page = client.get(PAGE, {"result_id": str(result.result_id)}).content.decode()
    assert 'id="missing-traces"' in page
    assert client.get(PAGE, {"result_id": "not-a-uuid"}).status_code == 200
