"""The reviewer's path through the console in headless Chromium (Debian's chromium and
chromium-driver; .ci/run installs them): log in, launch a run against the demo bot and watch its
progress bar until it completes, make the bot worse and run again, compare the two runs, open the
regression's failed verdict and override it. Each page is saved as a screenshot under
test-output/screenshots/ for a person to look at.

Skipped, with the reason, only where the browser or its driver is not installed."""

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from apps.bots.demo import DEMO_AGENT_ID, DEMO_RUBRIC_ID, DEMO_TEST_SET_ID, load_demo_evaluation_data
from apps.runs import services
from apps.runs.models import EvaluationRun, VerdictReview

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromedriver are not installed (Debian packages chromium and "
                              "chromium-driver; .ci/run installs them)"),
]


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="evalsite-chromium-")
    # No sandbox as root; no background network traffic (this machine has no network beyond loopback).
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1366,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def wait_for(predicate, timeout=20.0, message="condition"):
    """Poll until predicate() is truthy. An element that is gone (the page is being replaced) or
    not there yet counts as "not yet"."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (NoSuchElementException, StaleElementReferenceException):
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message}")


def click_and_wait_for_new_page(driver, element):
    """Click something that loads a page, and return once the old page is gone."""
    from selenium.common.exceptions import StaleElementReferenceException

    old_page = driver.find_element("tag name", "html")
    element.click()

    def replaced():
        try:
            old_page.tag_name
        except StaleElementReferenceException:
            return True
        return False
    wait_for(replaced, message="the next page")


def screenshot(driver, name: str, width: int = 1366):
    """The whole page at the given width (laptop 1366, tablet 820)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return Math.max(document.body.scrollHeight, 600)")
    driver.set_window_size(width, min(height + 120, 6000))
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(1366, 900)


def test_reviewer_path(browser, live_server, monkeypatch):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    load_demo_evaluation_data()
    from apps.agentic.demo import load_demo_evaluations
    from apps.traces.demo import load_demo_traces

    load_demo_traces()
    load_demo_evaluations()
    get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    find = browser.find_element

    # Log in, landing on the dashboard.
    browser.get(f"{live_server.url}/")
    find(By.NAME, "username").send_keys("reviewer")
    find(By.NAME, "password").send_keys("review-pass-1", Keys.ENTER)
    wait_for(lambda: browser.current_url.endswith("/console/"), message="the dashboard")
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
    wait_for(lambda: "/console/runs/" in browser.current_url and find(By.ID, "run-status").text == "running",
             message="the running run page")
    assert find(By.ID, "run-progress").get_attribute("value") == "0"
    screenshot(browser, "03-run-running")
    first = EvaluationRun.objects.get()
    while queued:
        services.result_execute(result_pk=queued.pop(0))
        if len(queued) == 1:
            # Part-way: the bar has moved without a reload.
            wait_for(lambda: int(find(By.ID, "run-progress").get_attribute("value")) >= 3, message="progress")
    wait_for(lambda: find(By.ID, "run-status").text == "completed", message="the run to complete")
    monkeypatch.undo()
    first.refresh_from_db()
    assert (first.status, first.completed, first.failed) == ("completed", 5, 0)
    assert "100%" in find(By.ID, "judge-pass-rate").text
    screenshot(browser, "04-run-completed")

    # The bot loses its PTO policy; running the same versions again regresses the PTO items.
    from apps.bots.models import KnowledgeDocument

    KnowledgeDocument.objects.filter(title="PTO Policy").delete()
    click_and_wait_for_new_page(browser, find(By.ID, "rerun"))
    wait_for(lambda: find(By.ID, "run-status").text == "completed" and browser.current_url.rstrip("/").split("/")[-1]
             != str(first.run_id), message="the second run")
    second = EvaluationRun.objects.exclude(pk=first.pk).get()
    assert second.failed >= 1
    screenshot(browser, "05-second-run")

    # Compare with the previous run: the regressions come first, each linking to what now fails.
    click_and_wait_for_new_page(browser, find(By.ID, "compare-previous"))
    wait_for(lambda: "Compare runs" in find(By.TAG_NAME, "h1").text, message="the comparison")
    regressions = find(By.ID, "regressions").find_element(By.XPATH, "following-sibling::div[1]")
    links = regressions.find_elements(By.CSS_SELECTOR, "td:last-child a")
    assert len(links) == second.failed, "every failed item passed in the first run"
    screenshot(browser, "06-compare")
    anchor = links[0].get_attribute("href").split("#", 1)[1]
    click_and_wait_for_new_page(browser, links[0])

    # The drill-down opens at the failed verdict; override it with a note.
    wait_for(lambda: browser.current_url.endswith(f"#{anchor}"), message="the failed verdict")
    verdict = find(By.ID, anchor)
    assert "FAIL" in verdict.text
    assert find(By.ID, "transcript").find_elements(By.CSS_SELECTOR, "details.tool"), "tool calls in the transcript"
    screenshot(browser, "07-result-failed")
    verdict.find_element(By.CSS_SELECTOR, "input[name=passed][value=true]").click()
    verdict.find_element(By.NAME, "note").send_keys("Judged by hand: acceptable without the policy text.")
    click_and_wait_for_new_page(browser, verdict.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    wait_for(lambda: find(By.ID, "review-history").is_displayed(), message="the review history")
    review = VerdictReview.objects.get()
    assert (review.passed, review.judge_passed, review.reviewer_name) == (True, False, "reviewer")
    assert "Judged by hand" in find(By.ID, anchor).text

    # Every other failed verdict of this item passed by hand too: the item passes after review.
    def unreviewed_failures():
        return [v for v in browser.find_elements(By.CSS_SELECTOR, ".verdict")
                if v.find_elements(By.CSS_SELECTOR, ".badge.fail") and "reviewer:" not in v.text]
    while unreviewed_failures():
        verdict = unreviewed_failures()[0]
        verdict.find_element(By.CSS_SELECTOR, "input[name=passed][value=true]").click()
        click_and_wait_for_new_page(browser, verdict.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        wait_for(lambda: "Review saved" in find(By.CSS_SELECTOR, "ul.messagelist").text, message="saved")
    assert "PASS" in find(By.ID, "human-verdict").text
    screenshot(browser, "08-result-reviewed")

    # The run's human-reviewed pass rate is one item up; the judge's has not moved.
    browser.get(f"{live_server.url}/console/runs/{second.run_id}/")
    judge_passed, completed = second.passed, second.completed
    assert f"({judge_passed}/{completed})" in find(By.ID, "judge-pass-rate").find_element(By.XPATH, "..").text
    assert f"({judge_passed + 1}/{completed}" in find(By.ID, "human-pass-rate").find_element(By.XPATH, "..").text
    assert "1 reviewed, 1 changed" in find(By.ID, "figures").text
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

    # Keyboard: the first Tab stops are the page's links, and a focused link shows an outline.
    browser.get(f"{live_server.url}/console/")
    find(By.TAG_NAME, "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.tag_name in ("a", "button", "input")
    assert os.listdir(SCREENSHOTS)
