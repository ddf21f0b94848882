"""The reviewer's path through the console in headless Chromium (Debian's chromium and
chromium-driver; .ci/run installs them): log in, launch a run against the demo bot and watch its
progress bar until it completes, make the bot worse and run again, compare the two runs, open the
regression's failed verdict and override it. Each page is saved as a screenshot under
test-output/screenshots/ for a person to look at.

Skipped, with the reason, only where the browser or its driver is not installed."""

import os
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model

from apps.bots.demo import DEMO_AGENT_ID
from apps.core.models import Project
from apps.rubrics.demo import DEMO_RUBRIC_ID
from apps.runs import services
from apps.runs.demo import load_demo_evaluation_data
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.testsets.demo import DEMO_TEST_SET_ID
from tests.console.browser import (
    SCREENSHOTS,
    click_and_wait_for_new_page,
    needs_chromium,
    screenshot,
    submit_and_wait_for_new_page,
    wait_for,
)
from tests.console.checkable_demo import publish_checkable_demo_test_set
from tests.runs.factories import review_views, verdict_reviews

pytestmark = [
    pytest.mark.browser,
    # transaction=True: the browser talks to live_server, a server thread with its own database
    # connection, which sees only committed rows.
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]


def test_reviewer_path(browser, live_server, monkeypatch):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    load_demo_evaluation_data()
    # Issue 20: the offline judge skips the demo's prose criteria; these PTO criteria it checks, so
    # the PTO items fail once the PTO policy is gone.
    publish_checkable_demo_test_set()
    from apps.agentic.demo import load_demo_evaluations
    from apps.traces.demo import load_demo_traces

    load_demo_traces()
    load_demo_evaluations()
    get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    find = browser.find_element

    # Log in, landing on the dashboard.
    browser.get(f"{live_server.url}/")
    find(By.NAME, "username").send_keys("reviewer")
    submit_and_wait_for_new_page(browser, find(By.NAME, "password"), "review-pass-1")
    assert browser.current_url.endswith("/console/")
    assert "Dashboard" in find(By.TAG_NAME, "h1").text
    screenshot(browser, "01-dashboard")

    # Launch a run from the console. Its items are held back from the queue so the page opens while
    # the run is going; the test then works them off as a worker would, and the progress bar follows.
    queued: list[int] = []
    monkeypatch.setattr(services, "_enqueue", queued.extend)
    click_and_wait_for_new_page(browser, find(By.LINK_TEXT, "Launch a run"))
    Select(find(By.NAME, "agent_id")).select_by_value(DEMO_AGENT_ID)
    Select(find(By.NAME, "test_set_id")).select_by_value(DEMO_TEST_SET_ID)
    Select(find(By.NAME, "rubric_id")).select_by_value(DEMO_RUBRIC_ID)
    concurrency = find(By.NAME, "concurrency")
    concurrency.clear()
    concurrency.send_keys("2")
    screenshot(browser, "02-launch")
    click_and_wait_for_new_page(browser, find(By.ID, "launch"))
    wait_for(
        lambda: "/console/runs/" in browser.current_url and find(By.ID, "run-status").text == "running",
        message="the running run page",
    )
    assert find(By.ID, "run-progress").get_attribute("value") == "0"
    screenshot(browser, "03-run-running")
    first = EvaluationRun.objects.get()
    # The page follows the run without reloading: a marker set on this page survives while finished
    # rows and the cards arrive.
    browser.execute_script("window.stillTheSamePage = true;")
    assert find(By.CSS_SELECTOR, "#results-table tbody tr.no-rows")
    services.result_execute(result_pk=queued.pop(0))
    wait_for(lambda: find(By.CSS_SELECTOR, "#results-table tbody tr[data-result-id]"), message="a finished row")
    # The demo test set and rubric are checkable offline (issue 20): the first item, the PTO question,
    # is judged and passes (with issue 16's demo rubric it was unassessed).
    wait_for(lambda: find(By.ID, "judge-pass-rate").text == "100%", message="the live cards")
    assert find(By.ID, "unassessed-items").text == "0"
    assert browser.execute_script("return window.stillTheSamePage === true;"), "the page was reloaded"
    assert len(find(By.ID, "results-table").find_elements(By.CSS_SELECTOR, "tbody tr[data-result-id]")) == 1
    services.result_execute(result_pk=queued.pop(0))
    wait_for(
        lambda: len(find(By.ID, "results-table").find_elements(By.CSS_SELECTOR, "tbody tr[data-result-id]")) == 2,
        message="a second row",
    )
    assert browser.execute_script("return window.stillTheSamePage === true;"), "the page was reloaded"
    screenshot(browser, "03b-run-live-rows")
    while queued:
        services.result_execute(result_pk=queued.pop(0))
        if len(queued) == 1:
            # Part-way: the bar has moved without a reload.
            wait_for(lambda: int(find(By.ID, "run-progress").get_attribute("value")) >= 3, message="progress")
    wait_for(lambda: find(By.ID, "run-status").text == "completed", message="the run to complete")
    monkeypatch.undo()
    first.refresh_from_db()
    assert (first.status, first.completed, first.failed, first.unassessed) == ("completed", 5, 1, 0)
    assert "80%" in find(By.ID, "judge-pass-rate").text
    screenshot(browser, "04-run-completed")

    # The bot loses its PTO policy; running the same versions again regresses the PTO items.
    from apps.bots.models import KnowledgeDocument

    KnowledgeDocument.objects.filter(title="PTO Policy").delete()
    click_and_wait_for_new_page(browser, find(By.ID, "rerun"))
    wait_for(
        lambda: (
            find(By.ID, "run-status").text == "completed"
            and browser.current_url.rstrip("/").split("/")[-1] != str(first.run_id)
        ),
        message="the second run",
    )
    second = EvaluationRun.objects.exclude(pk=first.pk).get()
    assert second.failed >= 1
    screenshot(browser, "05-second-run")

    # Compare with the previous run: the regressions come first, each linking to what now fails.
    click_and_wait_for_new_page(browser, find(By.ID, "compare-previous"))
    wait_for(lambda: "Compare runs" in find(By.TAG_NAME, "h1").text, message="the comparison")
    regressions = find(By.ID, "regressions").find_element(By.XPATH, "following-sibling::div[1]")
    links = regressions.find_elements(By.CSS_SELECTOR, "td:last-child a")
    # The dog question failed in both runs: still failing, not a regression.
    assert len(links) == second.failed - first.failed >= 1, "the items that now fail, and only they"
    screenshot(browser, "06-compare")
    anchor = links[0].get_attribute("href").split("#", 1)[1]
    click_and_wait_for_new_page(browser, links[0])

    # The drill-down opens at the failed verdict; override it with a note.
    wait_for(lambda: browser.current_url.endswith(f"#{anchor}"), message="the failed verdict")
    verdict = find(By.ID, anchor)
    assert "FAIL" in verdict.text
    assert find(By.ID, "transcript").find_elements(By.CSS_SELECTOR, "details.tool"), "tool calls in the transcript"
    # The answer stays in view beside the verdict the page opened at (a sticky column at this width),
    # above the verdicts the item's input, answer and what was expected.
    answer = find(By.ID, "final-answer")
    # (-1, not 0: scrolled to, an element's top may sit a sub-pixel above the viewport, e.g. -0.23.)
    in_view = "var r = arguments[0].getBoundingClientRect(); return r.top > -1 && r.top < window.innerHeight;"
    assert browser.execute_script(in_view, answer), "the answer scrolled away"
    assert browser.execute_script(in_view, verdict)
    assert find(By.ID, "item-input").text and find(By.ID, "item-expected").find_elements(By.TAG_NAME, "li")
    browser.save_screenshot(str(SCREENSHOTS / "07a-result-at-the-verdict-viewport.png"))
    screenshot(browser, "07-result-failed")
    screenshot(browser, "07-result-failed-tablet", width=820)
    verdict.find_element(By.CSS_SELECTOR, "input[name=passed][value=true]").click()
    verdict.find_element(By.NAME, "note").send_keys("Judged by hand: acceptable without the policy text.")
    click_and_wait_for_new_page(browser, verdict.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    wait_for(lambda: find(By.ID, "review-history").is_displayed(), message="the review history")
    review = review_views(EvaluationResult.objects.get(pk=verdict_reviews().get().subject_id))[0]
    assert (review.passed, review.judge_passed, review.reviewer_name) == (True, False, "reviewer")
    assert "Judged by hand" in find(By.ID, anchor).text

    # Every other failed verdict of this item passed by hand too, and the ones the judge could not
    # give (skipped: the high-severity rules) judged by hand: only then does the item pass after review.
    def unreviewed_failures():
        return [
            v
            for v in browser.find_elements(By.CSS_SELECTOR, ".verdict")
            if v.find_elements(By.CSS_SELECTOR, ".badge.fail, .badge.warn")
            and "reviewer:" not in v.text
            and v.find_elements(By.CSS_SELECTOR, "input[name=passed][value=true]")
        ]

    while unreviewed_failures():
        verdict = unreviewed_failures()[0]
        verdict.find_element(By.CSS_SELECTOR, "input[name=passed][value=true]").click()
        click_and_wait_for_new_page(browser, verdict.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        wait_for(lambda: "Review saved" in find(By.CSS_SELECTOR, "ul.messagelist").text, message="saved")
    assert "PASS" in find(By.ID, "human-verdict").text
    screenshot(browser, "08-result-reviewed")

    # The run's human-reviewed pass rate counts the one reviewed item, which passed; the judge's has not moved.
    browser.get(f"{live_server.url}/console/runs/{second.run_id}/")
    judge_passed, completed = second.passed, second.completed
    judge_card = find(By.ID, "judge-pass-rate").find_element(By.XPATH, "..").text
    assert f"({judge_passed}/{completed} items passed" in judge_card
    human_card = find(By.ID, "human-pass-rate").find_element(By.XPATH, "..").text
    assert "(1/1 reviewed items · 1 changed by review" in human_card
    assert find(By.ID, "human-pass-rate").text == "100%"
    screenshot(browser, "09-run-reviewed")
    screenshot(browser, "09-run-reviewed-tablet", width=820)

    # The rubric page shows the review in its agreement table; the trace page its timeline.
    browser.get(f"{live_server.url}/console/rubrics/{DEMO_RUBRIC_ID}/")
    assert find(By.ID, "rule-agreement").is_displayed()
    screenshot(browser, "10-rubric-agreement")
    from apps.agentic.models import AgentEvaluation

    session = AgentEvaluation.objects.exclude(trace=None).values_list("session_id", flat=True).first()
    browser.get(f"{live_server.url}/console/traces/{session}/")
    assert find(By.ID, "timeline").find_elements(By.TAG_NAME, "li")
    screenshot(browser, "11-trace")

    # A run nobody picks up says so, and how to start a worker, instead of looking started.
    stuck = EvaluationRun.objects.create(
        project=Project.objects.default(),
        agent_id=DEMO_AGENT_ID,
        test_set_id=DEMO_TEST_SET_ID,
        test_set_version=1,
        total=5,
    )
    EvaluationRun.objects.filter(pk=stuck.pk).update(created_at=stuck.created_at - timedelta(minutes=2))
    browser.get(f"{live_server.url}/console/runs/{stuck.run_id}/")
    assert "celery -A evalsite worker" in find(By.ID, "no-worker").text
    screenshot(browser, "12-run-no-worker")

    # Keyboard: the first Tab stops are the page's links, and a focused link shows an outline.
    browser.get(f"{live_server.url}/console/")
    find(By.TAG_NAME, "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.tag_name in ("a", "button", "input")
    assert os.listdir(SCREENSHOTS)


def test_reader_path(browser, live_server, settings):
    """A non-staff reader logs in at the console's login, reads the trace list (searching it), picks
    two runs to compare and asks a metrics question without a backend; launching is not offered
    and refused when typed in."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from apps.agentic.demo import load_demo_evaluations
    from apps.traces.demo import load_demo_traces
    from tests.runs.factories import EvaluationRunFactory

    settings.PROMETHEUS_URL = settings.GRAFANA_URL = ""
    load_demo_evaluation_data()
    load_demo_traces()
    load_demo_evaluations()
    first = EvaluationRunFactory(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, rubric_id=DEMO_RUBRIC_ID)
    second = EvaluationRunFactory(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, rubric_id=DEMO_RUBRIC_ID)
    get_user_model().objects.create_user("reader", password="read-pass-1")
    find = browser.find_element

    browser.get(f"{live_server.url}/console/traces/")
    wait_for(lambda: "/console/login/" in browser.current_url, message="the console's login")
    assert "Log in to the evalsite console" in wait_for(lambda: find(By.TAG_NAME, "h1").text, message="the login page")
    screenshot(browser, "20-login")
    find(By.NAME, "username").send_keys("reader")
    submit_and_wait_for_new_page(browser, find(By.NAME, "password"), "read-pass-1")
    assert browser.current_url.endswith("/console/traces/")
    nav = find(By.CSS_SELECTOR, "nav.console-nav").text
    assert "Traces" in nav and "Launch a run" not in nav and "Admin" not in nav
    rows = find(By.ID, "traces").find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) > 1
    screenshot(browser, "21-trace-list")
    session = rows[0].find_element(By.TAG_NAME, "a").get_attribute("title")
    submit_and_wait_for_new_page(browser, find(By.NAME, "q"), session)
    assert "q=" in browser.current_url
    found = wait_for(
        lambda: find(By.ID, "traces").find_elements(By.CSS_SELECTOR, "tbody tr a"), message="the search's results"
    )
    assert [a.get_attribute("title") for a in found] == [session]
    find(By.NAME, "q").clear()
    Select(find(By.NAME, "status")).select_by_value("completed")
    click_and_wait_for_new_page(browser, find(By.CSS_SELECTOR, "#trace-filters button[type=submit]"))
    screenshot(browser, "22-trace-list-filtered")

    click_and_wait_for_new_page(browser, find(By.LINK_TEXT, "Compare"))
    assert "Compare two runs" in find(By.TAG_NAME, "h1").text
    head = Select(find(By.NAME, "head"))
    assert head.first_selected_option.get_attribute("value") == str(second.run_id)
    assert "Demo" in head.first_selected_option.text or " · " in head.first_selected_option.text
    screenshot(browser, "23-compare-landing")
    Select(find(By.NAME, "base")).select_by_value(str(first.run_id))
    click_and_wait_for_new_page(browser, find(By.CSS_SELECTOR, "#compare-pick button[type=submit]"))
    assert "Compare runs" in find(By.TAG_NAME, "h1").text

    browser.get(f"{live_server.url}/metrics-query/?q=Show+CPU+usage+for+the+last+hour")
    assert find(By.NAME, "q").get_attribute("value") == "Show CPU usage for the last hour"
    assert "No metrics backend is configured" in find(By.ID, "setup").text
    assert find(By.ID, "scrape-snippet").is_displayed()
    assert len(browser.find_elements(By.TAG_NAME, "h1")) == 1
    screenshot(browser, "24-metrics-query")

    browser.get(f"{live_server.url}/console/runs/new/")
    assert "lacks the 'evaluate' scope" in find(By.TAG_NAME, "body").text
    browser.get(f"{live_server.url}/console/")
    click_and_wait_for_new_page(browser, find(By.CSS_SELECTOR, "#logout-form button"))
    wait_for(lambda: "/console/login/" in browser.current_url, message="back at the login")
