import pytest

from apps.core.models import Project
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.schemas import RunCreateIn
from tests.bots.factories import BotFactory
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET, EvaluationRunFactory
from tests.testsets.factories import SuiteFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan_choices(plan):
    """Rows under the plan's ids: the launch form offers the bots, test sets and rubrics that exist
    (the run itself still reads the plan's fakes)."""
    bot = BotFactory(agent_id=PLAN_AGENT)
    SuiteFactory(bot=bot, test_set_id=PLAN_TEST_SET)
    RubricFactory(bot=bot, rubric_id=PLAN_RUBRIC)
    return plan


def test_launch_from_the_admin_then_drill_down(admin_client, plan_choices, django_capture_on_commit_callbacks):
    page = admin_client.get("/admin/runs/evaluationrun/launch/")
    assert page.status_code == 200 and b"Launch run" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/runs/evaluationrun/launch/",
            {
                "agent_id": PLAN_AGENT,
                "test_set_id": str(PLAN_TEST_SET),
                "rubric_id": str(PLAN_RUBRIC),
                "concurrency": 2,
                "judge_model": "heuristic",
            },
        )
    assert response.status_code == 302, response.context["form"].errors
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{run.pk}/change/")

    listing = admin_client.get("/admin/runs/evaluationrun/").content.decode()
    assert "<progress" in listing and "67% (4/6)" in listing and "Launch a run" in listing
    run_page = admin_client.get(f"/admin/runs/evaluationrun/{run.pk}/change/").content.decode()
    assert "knowledge_base: " in run_page and "item 2" in run_page

    failed = EvaluationResult.objects.filter(run=run, passed=False).first()
    result_page = admin_client.get(f"/admin/runs/evaluationresult/{failed.pk}/change/").content.decode()
    assert "FAIL" in result_page and "wifi password" in result_page
    assert "<details><summary>tool call <code>search_kb</code>" in result_page
    assert "heuristic:v1" in result_page


def test_launch_form_shows_service_errors(admin_client, plan_choices):
    bot = BotFactory(agent_id="b" * 24)  # offered by the form; the plan's bot source does not know it
    # A test set of that bot: the form refuses another bot's before the service is asked.
    own_test_set = SuiteFactory(bot=bot)
    response = admin_client.post(
        "/admin/runs/evaluationrun/launch/",
        {"agent_id": "b" * 24, "test_set_id": str(own_test_set.pk), "concurrency": 3},
    )
    assert response.status_code == 200 and b"No bot with agent_id" in response.content
    assert EvaluationRun.objects.count() == 0


def test_cancel_action(admin_client, plan, monkeypatch, django_capture_on_commit_callbacks):
    from apps.runs import services

    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn(agent_id=PLAN_AGENT, test_set_id=PLAN_TEST_SET, judge_model="heuristic"),
        )
    admin_client.post("/admin/runs/evaluationrun/", {"action": "cancel_runs", "_selected_action": [run.pk]})
    assert EvaluationRun.objects.get(pk=run.pk).status == "cancelled"


def test_the_run_list_names_runs_test_sets_and_bots_and_filters_by_bot_name(admin_client):
    hr, sales = BotFactory(name="HR assistant"), BotFactory(name="Sales bot")
    onboarding = SuiteFactory(bot=hr, name="Onboarding questions")
    labelled = EvaluationRunFactory(
        agent_id=hr.agent_id,
        test_set_id=onboarding.pk,
        test_set_version=3,
        rubric_id=None,
        label="after the PTO fix",
        judge="heuristic:v1",
    )
    other = EvaluationRunFactory(agent_id=sales.agent_id, test_set_id=onboarding.pk, rubric_id=None)
    EvaluationRunFactory(agent_id="d" * 24, test_set_id=onboarding.pk, rubric_id=None)  # its bot was deleted
    html = admin_client.get("/admin/runs/evaluationrun/").content.decode()
    assert "after the PTO fix" in html and "Onboarding questions v3" in html
    assert f'title="run {labelled.run_id}"' in html  # the id is the title, not cut-off text
    assert f"{str(labelled.run_id)[:8]}…" not in html
    assert "#result_list td.field-judge { overflow-wrap: normal; }" in html  # "heuristic:v1", not "heurist ic:v1"
    # The bot filter offers names (a deleted bot by its id), and filters by the bot's id.
    assert f'<a href="?agent_id={hr.agent_id}">HR assistant</a>' in html
    assert f'<a href="?agent_id={sales.agent_id}">Sales bot</a>' in html and f"(deleted bot {'d' * 24})" in html
    filtered = admin_client.get("/admin/runs/evaluationrun/", {"agent_id": hr.agent_id})
    assert [run.pk for run in filtered.context["cl"].result_list] == [labelled.pk]
    assert other.pk in [
        run.pk
        for run in admin_client.get("/admin/runs/evaluationrun/", {"agent_id": sales.agent_id})
        .context["cl"]
        .result_list
    ]
