"""Issue 21: a trace's page in Chromium. "Show more" appends the next page of tool calls to the
timeline where the link was, without leaving the page, until the last; a truncated trace shows its
banner. Screenshots go to test-output/screenshots/ (trace-paged*.png, trace-truncated.png)."""

import pytest
from django.conf import settings
from django.test import Client

from tests.console.browser import SCREENSHOTS, needs_chromium, screenshot, wait_for
from tests.core.factories import UserFactory
from tests.traces.test_trace_paging import _trace_with_seqs

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

CALLS = "return [...document.querySelectorAll('#timeline li.call')].map(li => li.id)"


def _log_in(browser, live_server):
    client = Client()
    client.force_login(UserFactory(username="reader"))
    browser.get(f"{live_server.url}/static/console/console.css")
    browser.add_cookie(
        {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "path": "/"}
    )


def test_show_more_appends_the_next_pages_in_place(browser, live_server, settings):
    settings.EVALSITE_TRACE_TOOL_CALLS_PAGE = 4
    _trace_with_seqs("paged", [1024 * n for n in range(1, 11)])
    _log_in(browser, live_server)
    browser.get(f"{live_server.url}/console/traces/paged/")
    assert browser.execute_script(CALLS) == [f"call-{n}" for n in range(1, 5)]
    assert browser.find_element("id", "shown-range").text == "1–4"
    screenshot(browser, "trace-paged")
    browser.execute_script("window.__samePage = true;")

    browser.find_element("id", "show-more").click()
    wait_for(lambda: len(browser.execute_script(CALLS)) == 8, message="the second page appended")
    assert browser.execute_script(CALLS) == [f"call-{n}" for n in range(1, 9)]
    assert browser.find_element("id", "shown-range").text == "1–8"
    assert "2 more tool calls" in browser.find_element("id", "more-calls").text

    browser.find_element("id", "show-more").click()
    wait_for(lambda: len(browser.execute_script(CALLS)) == 10, message="the last page appended")
    assert browser.execute_script(CALLS) == [f"call-{n}" for n in range(1, 11)]
    assert not browser.find_elements("id", "more-calls")
    # Appended in place: the same document, its address unchanged, and the final answer still last.
    assert browser.execute_script("return window.__samePage === true")
    assert browser.current_url == f"{live_server.url}/console/traces/paged/"
    last = browser.execute_script("return document.querySelector('#timeline').lastElementChild.textContent")
    assert "final answer" in last
    screenshot(browser, "trace-paged-all")


def test_a_truncated_trace_shows_its_banner(browser, live_server):
    _trace_with_seqs("capped", [1024, 2048], truncated=True, dropped={"tool_calls": 58000, "spans": 12})
    _log_in(browser, live_server)
    browser.get(f"{live_server.url}/console/traces/capped/")
    banner = browser.find_element("id", "truncated")
    assert banner.is_displayed()
    assert "58000 tool calls, 12 spans not kept" in banner.text
    screenshot(browser, "trace-truncated")
    assert (SCREENSHOTS / "trace-truncated.png").exists()
