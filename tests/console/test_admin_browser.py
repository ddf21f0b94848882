"""The admin at 1440 px in headless Chromium (issue 15, point 8): no page wider than the window,
the rubric and test set editors a fraction of their old height for five items, scenario-only fields
only on scenario items. The figures are printed (run with -s) and the pages saved as screenshots
under test-output/screenshots/admin-*.png."""

import pytest
from django.contrib.auth import get_user_model

from apps.bots.demo import DEMO_AGENT_ID
from apps.bots.models import Bot
from apps.rubrics.demo import DEMO_RUBRIC_ID
from apps.runs.demo import load_demo_evaluation_data
from apps.testsets.demo import DEMO_TEST_SET_ID
from apps.testsets.models import TestSet
from tests.console.browser import SCREENSHOTS, needs_chromium, submit_and_wait_for_new_page, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

WIDTH = 1440


def measure(driver) -> tuple[int, int]:
    return tuple(
        driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    )


def shoot(driver, name: str):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _width, height = measure(driver)
    driver.set_window_size(WIDTH, min(height + 140, 7000))
    driver.save_screenshot(str(SCREENSHOTS / f"admin-{name}.png"))
    driver.set_window_size(WIDTH, 900)


def expand_everything(driver):
    """The editor as it was before: every row open, every field shown."""
    driver.execute_script("""
        document.querySelectorAll('.evalsite-expand').forEach(b => b.click());
        document.querySelectorAll('.evalsite-not-applicable')
            .forEach(r => r.classList.remove('evalsite-not-applicable'));
    """)


def test_admin_pages_fit_a_1440_px_window(browser, live_server):
    from selenium.webdriver.common.by import By

    from apps.agentic.demo import load_demo_evaluations
    from apps.traces.demo import load_demo_traces
    from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion

    load_demo_evaluation_data()
    load_demo_traces()
    load_demo_evaluations()
    for _ in range(3):
        run = EvaluationRunFactory(agent_id=DEMO_AGENT_ID, judge="openai:gpt-4o-mini-2024-07-18")
        EvaluationResultFactory(
            run=run,
            item_name="PTO Policy Inquiry with a rather long item name to wrap",
            criteria_scores=[criterion("Mentions 15 days", False)],
        )
    get_user_model().objects.create_superuser("admin", password="admin-pass-1")
    browser.set_window_size(WIDTH, 900)
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.NAME, "username").send_keys("admin")
    submit_and_wait_for_new_page(browser, browser.find_element(By.NAME, "password"), "admin-pass-1")
    assert browser.find_elements(By.ID, "site-name") and "/login/" not in browser.current_url
    window = browser.execute_script("return window.innerWidth")
    figures = {}

    bot = Bot.objects.get(agent_id=DEMO_AGENT_ID)
    pages = {
        "bot": f"/admin/bots/bot/{bot.pk}/change/",
        "bot-list": "/admin/bots/bot/",
        "rubric-list": "/admin/rubrics/rubric/",
        "testset-list": "/admin/testsets/testset/",
        "run-list": "/admin/runs/evaluationrun/",
        "result-list": "/admin/runs/evaluationresult/",
        "trace-list": "/admin/traces/agenttrace/",
        "agent-evaluation-list": "/admin/agentic/agentevaluation/",
        "rag-list": "/admin/rag/traceevaluation/",
    }
    for name, path in pages.items():
        browser.get(live_server.url + path)
        width, _height = measure(browser)
        # A list's table scrolls inside its box when too wide: that hid the last column.
        table = browser.execute_script(
            "const t = document.getElementById('result_list');"
            "return t ? [t.scrollWidth, t.parentElement.clientWidth] : null"
        )
        figures[name] = (width, table)
        shoot(browser, name)
        assert width <= window, f"{name} is {width} px wide in a {window} px window"
        assert table is None or table[0] <= table[1], f"{name}: the table is {table[0]} px in {table[1]} px"

    # The bot's tools: one collapsed line each; opened, the type is a select.
    browser.get(live_server.url + pages["bot"])
    tools = browser.find_elements(By.CSS_SELECTOR, "#tools-group .inline-related.has_original")
    assert tools and all("evalsite-collapsed" in t.get_attribute("class") for t in tools)
    tools[0].find_element(By.TAG_NAME, "h3").click()
    assert tools[0].find_element(By.CSS_SELECTOR, "select[name$='-type']").is_displayed()
    shoot(browser, "bot-tool-open")

    editors = {
        "rubric": f"/admin/rubrics/rubric/{DEMO_RUBRIC_ID}/change/",
        "testset": f"/admin/testsets/testset/{DEMO_TEST_SET_ID}/change/",
    }
    for name, path in editors.items():
        browser.get(live_server.url + path)
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".evalsite-inline-tools"), message="admin.js")
        width, collapsed = measure(browser)
        assert width <= window
        shoot(browser, name)
        expand_everything(browser)
        _width, expanded = measure(browser)
        figures[f"{name}-height"] = (collapsed, expanded)
        assert collapsed * 3 < expanded, f"{name}: {collapsed} px collapsed, {expanded} px expanded"

    # Scenario-only fields: hidden on a single-turn item, shown on a scenario and when a row's type
    # changes to scenario.
    browser.get(live_server.url + editors["testset"])
    browser.find_element(By.CSS_SELECTOR, ".evalsite-expand").click()
    items = TestSet.objects.get(pk=DEMO_TEST_SET_ID).items.order_by("position", "id")
    single = next(i for i, item in enumerate(items) if item.type == "single_turn")

    def shown(index, field):
        return browser.find_element(By.NAME, f"items-{index}-{field}").is_displayed()

    for field in ("persona", "initial_message", "max_turns", "scripted_turns"):
        assert not shown(single, field), field
    assert shown(single, "message")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.NAME, f"items-{single}-type")).select_by_value("scenario")
    assert shown(single, "persona") and shown(single, "scripted_turns") and not shown(single, "message")
    Select(browser.find_element(By.NAME, f"items-{single}-type")).select_by_value("single_turn")
    shoot(browser, "testset-expanded")

    # Restore asks first, showing what it would change.
    from tests.testsets.factories import SuiteVersionFactory

    SuiteVersionFactory(test_set=TestSet.objects.get(pk=DEMO_TEST_SET_ID), description="Edited", changelog="edit")
    browser.get(f"{live_server.url}/admin/testsets/testset/{DEMO_TEST_SET_ID}/versions/")
    shoot(browser, "testset-history")
    browser.find_element(By.LINK_TEXT, "Restore v1…").click()
    wait_for(lambda: "Yes, restore v1" in browser.page_source, message="the confirmation")
    assert TestSet.objects.get(pk=DEMO_TEST_SET_ID).current_version == 2
    shoot(browser, "testset-restore-confirm")
    browser.find_element(By.CSS_SELECTOR, "input[value='Yes, restore v1']").click()
    wait_for(lambda: "restored as version 3" in browser.page_source, message="the restore")
    print("\nadmin at 1440 px:", figures)


def test_many_items_are_shown_a_page_at_a_time(browser, live_server):
    from selenium.webdriver.common.by import By

    from tests.testsets.factories import ItemFactory, SuiteFactory

    test_set = SuiteFactory(items=ItemFactory.build_batch(45))
    get_user_model().objects.create_superuser("admin", password="admin-pass-1")
    browser.set_window_size(WIDTH, 900)
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.NAME, "username").send_keys("admin")
    submit_and_wait_for_new_page(browser, browser.find_element(By.NAME, "password"), "admin-pass-1")
    assert "/login/" not in browser.current_url
    browser.get(f"{live_server.url}/admin/testsets/testset/{test_set.pk}/change/")

    def visible_rows():
        return [
            r
            for r in browser.find_elements(By.CSS_SELECTOR, "#items-group .inline-related.has_original")
            if r.is_displayed()
        ]

    assert len(visible_rows()) == 20
    label = browser.find_element(By.CSS_SELECTOR, ".evalsite-page-label")
    assert label.text == "1–20 of 45"
    browser.find_element(By.CSS_SELECTOR, ".evalsite-next").click()
    browser.find_element(By.CSS_SELECTOR, ".evalsite-next").click()
    assert label.text == "41–45 of 45" and len(visible_rows()) == 5
    shoot(browser, "testset-paginated")

    # Saving from page 3 still publishes all 45 items.
    browser.find_element(By.NAME, "changelog").send_keys("from page 3")
    browser.find_element(By.NAME, "_continue").click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".messagelist"), message="saved")
    test_set.refresh_from_db()
    assert test_set.items.count() == 45
