"""The rubric page's alignment trial form in headless Chromium: only the field of the chosen
candidate is shown (static/console/console.js), and starting a trial lands on its page."""

import pytest
from django.conf import settings
from django.test import Client

from tests.console.browser import needs_chromium
from tests.core.factories import UserFactory
from tests.runs.alignment_fixtures import brief_rubric, labelled

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

SHOWN = (
    "return [...document.querySelectorAll('#trial-form [data-kind]')].filter(p => !p.hidden).map(p => p.dataset.kind);"
)


def test_the_form_shows_the_chosen_candidates_field_and_starts_a_trial(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    rubric = brief_rubric()
    labelled(rubric, 10, 10)
    client = Client()
    client.force_login(UserFactory(username="aligner", is_staff=True))
    browser.get(f"{live_server.url}/static/console/console.css")
    browser.add_cookie(
        {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "path": "/"}
    )
    browser.get(f"{live_server.url}/console/rubrics/{rubric.pk}/")
    assert browser.execute_script(SHOWN) == ["rubric_version"]
    browser.find_element(By.CSS_SELECTOR, "#trial-form input[name=kind][value=judge_model]").click()
    assert browser.execute_script(SHOWN) == ["judge_model"]
    browser.find_element(By.CSS_SELECTOR, "#trial-form input[name=kind][value=rubric_version]").click()
    Select(browser.find_element(By.NAME, "rubric_version")).select_by_value("2")
    browser.find_element(By.CSS_SELECTOR, "#trial-form button[type=submit]").click()
    # The job runs in the worker (eager here, once the request commits); the page refreshes itself
    # while the trial runs, and then shows its figures.
    WebDriverWait(browser, 20).until(lambda b: "/console/alignment-trials/" in b.current_url)
    WebDriverWait(browser, 20).until(lambda b: "Agreement with the reviewers on the held-out items" in b.page_source)
    assert "Better at 95%." in browser.page_source
