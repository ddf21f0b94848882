"""Issue 20, point 6: the launch form in headless Chromium offers only the chosen bot's test sets
and rubrics (static/console/launch.js), and switching the bot switches them."""

import pytest
from django.conf import settings
from django.test import Client

from tests.bots.factories import BotFactory
from tests.console.browser import needs_chromium
from tests.core.factories import UserFactory
from tests.rubrics.factories import RubricFactory
from tests.testsets.factories import SuiteFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

OFFERED = """
return [...document.querySelectorAll('#launch-form select[name=' + arguments[0] + '] option')]
  .filter(o => !o.hidden && !o.disabled).map(o => o.textContent.trim());
"""


def test_launch_form_offers_only_the_chosen_bots_test_sets_and_rubrics(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    alpha, beta = BotFactory(name="Alpha"), BotFactory(name="Beta")
    SuiteFactory(bot=alpha, name="Alpha set")
    SuiteFactory(bot=beta, name="Beta set")
    RubricFactory(bot=alpha, name="Alpha rubric")
    RubricFactory(bot=beta, name="Beta rubric")
    client = Client()
    client.force_login(UserFactory(username="launcher", is_staff=True))
    browser.get(f"{live_server.url}/static/console/console.css")
    browser.add_cookie(
        {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "path": "/"}
    )
    browser.get(f"{live_server.url}/console/runs/new/?agent_id={beta.agent_id}")

    assert browser.execute_script(OFFERED, "test_set_id") == ["Beta set (v1)"]
    assert browser.execute_script(OFFERED, "rubric_id") == ["no rubric", "Beta rubric (v1)"]
    test_set = Select(browser.find_element(By.NAME, "test_set_id"))
    assert test_set.first_selected_option.text == "Beta set (v1)"

    Select(browser.find_element(By.NAME, "rubric_id")).select_by_visible_text("Beta rubric (v1)")
    Select(browser.find_element(By.NAME, "agent_id")).select_by_visible_text("Alpha (demo)")
    assert browser.execute_script(OFFERED, "test_set_id") == ["Alpha set (v1)"]
    assert browser.execute_script(OFFERED, "rubric_id") == ["no rubric", "Alpha rubric (v1)"]
    # The other bot's choices are dropped, not kept out of sight.
    assert test_set.first_selected_option.text == "Alpha set (v1)"
    assert Select(browser.find_element(By.NAME, "rubric_id")).first_selected_option.text == "no rubric"
