"""Issue 15, points 2 and 4, as a reviewer sees them in headless Chromium: two labelled runs of the
demo test set, the PTO document deleted between them; the run list names them and filters by bot
and test set from dropdowns, the run page's header names bot, test set and label, the comparison
shows the removed document and the regressed item's two answers side by side, and the dashboard
draws one trend line per test set. Screenshots go to test-output/screenshots/ (2x-*.png).

Its own module (the browser fixture is in conftest.py) so it does not wait behind the reviewer path."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.bots.demo import DEMO_AGENT_ID
from apps.bots.models import KnowledgeDocument
from apps.rubrics.demo import DEMO_RUBRIC_ID
from apps.runs import services
from apps.runs.demo import load_demo_evaluation_data
from apps.runs.models import EvaluationRun
from apps.testsets.demo import DEMO_TEST_SET_ID
from tests.console.checkable_demo import publish_checkable_demo_test_set
from tests.console.browser import click_and_wait_for_new_page, needs_chromium, screenshot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]


def log_in(browser, live_server, user):
    """The session of a logged-in user, set as the browser's cookie (the login page is not what
    this test is about)."""
    client = Client()
    client.force_login(user)
    browser.get(f"{live_server.url}/static/console/console.css")
    browser.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                        "path": "/"})


def test_runs_are_named_and_bot_changes_show(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    load_demo_evaluation_data()
    # Issue 20: the offline judge skips the demo's prose criteria; these PTO criteria it checks.
    publish_checkable_demo_test_set()
    reviewer = get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    # Tasks run in-process (eager) once each run's transaction commits.
    first = services.run_create(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, rubric_id=DEMO_RUBRIC_ID,
                                concurrency=2, label="baseline", created_by=reviewer)
    KnowledgeDocument.objects.filter(title="PTO Policy").delete()
    second = services.run_rerun(run=first, label="PTO document deleted", created_by=reviewer)
    second.refresh_from_db()
    assert second.status == "completed" and second.failed >= 1
    find = browser.find_element
    log_in(browser, live_server, reviewer)

    # The run list: label, bot and test set by name; dropdown filters.
    browser.get(f"{live_server.url}/console/runs/")
    table = find(By.ID, "runs").text
    assert "PTO document deleted" in table and "baseline" in table
    assert "O'Connor Internal Ops Associate Test Set v2" in table
    Select(find(By.ID, "filter-bot")).select_by_value(DEMO_AGENT_ID)
    Select(find(By.ID, "filter-test-set")).select_by_value(DEMO_TEST_SET_ID)
    click_and_wait_for_new_page(browser, find(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    assert len(find(By.ID, "runs").find_elements(By.CSS_SELECTOR, "tbody tr")) == 2
    screenshot(browser, "2x-01-run-list")

    # The run page's header names the run.
    click_and_wait_for_new_page(browser, find(By.PARTIAL_LINK_TEXT, "PTO document deleted"))
    heading = find(By.TAG_NAME, "h1").text
    assert heading.startswith("PTO document deleted:") and "Test Set v2" in heading
    screenshot(browser, "2x-02-run-header")

    # The comparison: what changed in the bot, and the regressed item's two answers side by side.
    click_and_wait_for_new_page(browser, find(By.ID, "compare-previous"))
    changes = find(By.ID, "bot-change-list").text
    assert "document removed PTO Policy" in changes
    pairs = find(By.CSS_SELECTOR, "#regressions + div .compare-answers .side-by-side")
    before, after = pairs.find_element(By.CLASS_NAME, "answer-before"), pairs.find_element(By.CLASS_NAME, "answer-after")
    assert before.location["y"] == after.location["y"] and before.location["x"] < after.location["x"], "side by side"
    assert before.text != after.text
    screenshot(browser, "2x-03-compare")
    screenshot(browser, "2x-03-compare-tablet", width=820)

    # The dashboard: one trend line per test set; the runs named.
    browser.get(f"{live_server.url}/console/")
    trend = find(By.CSS_SELECTOR, "#run-trend svg").get_attribute("aria-label")
    assert "O'Connor Internal Ops Associate Test Set" in trend
    assert "PTO document deleted" in find(By.CSS_SELECTOR, "table.bot-runs").text
    screenshot(browser, "2x-04-dashboard")

    # The launch form takes a label.
    browser.get(f"{live_server.url}/console/runs/new/")
    find(By.NAME, "label").send_keys("after restoring the PTO document")
    screenshot(browser, "2x-05-launch-label")


def test_a_repeated_run_shows_pass_hat_k_and_its_flaky_item(browser, live_server):
    """Issue 16 item 1 in the browser: a run of three items, three attempts each; one item passes
    two attempts of three. The cards show pass^3, pass@3 and one flaky item; each attempt is its own
    row, and the flaky item's rows say so."""
    from selenium.webdriver.common.by import By

    from apps.runs import selectors
    from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion

    reviewer = get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    run = EvaluationRunFactory(repeats=3, rubric_id=None, label="three attempts each")
    for attempt in (1, 2, 3):
        for position, name in enumerate(["Sometimes answers", "Never answers", "Always answers"]):
            passed = name == "Always answers" or (name == "Sometimes answers" and attempt != 2)
            EvaluationResultFactory(run=run, position=position, attempt=attempt, item_name=name,
                                    criteria_scores=[criterion("Answers the question", passed)])
    run.refresh_from_db()
    # What the engine stores when a run completes (services._finalize).
    figures = selectors.item_figures(run=run)
    passed = run.results.filter(passed=True).count()
    EvaluationRun.objects.filter(pk=run.pk).update(
        passed=passed, failed=run.completed - passed, items_passed_all=figures["items_passed_all"],
        items_passed_any=figures["items_passed_any"], flaky_items=figures["flaky_items"])
    log_in(browser, live_server, reviewer)
    browser.get(f"{live_server.url}/console/runs/{run.run_id}/")
    trials = browser.find_element(By.ID, "trials").text
    assert "33%" in trials and "pass^3" in trials and "pass@3 67%" in trials and "1 flaky of 3 items" in trials
    rows = browser.find_elements(By.CSS_SELECTOR, "td.item-name")
    assert len(rows) == 9
    flaky = [r.text for r in rows if "flaky" in r.text]
    assert len(flaky) == 3 and all(t.startswith("Sometimes answers") for t in flaky)
    assert {t.split("attempt ")[1][0] for t in flaky} == {"1", "2", "3"}
    assert "3 attempts per item" in browser.find_element(By.TAG_NAME, "body").text
    screenshot(browser, "2x-06-repeated-run")
