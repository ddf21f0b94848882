"""Single sign-on in headless Chromium: "Sign in with SSO" on the console's login page, through the
real provider's login and consent pages, back to the console logged in. The login page is saved as
screenshots (SSO beside the password form, and SSO only with EVALSITE_PASSWORD_LOGIN=0, the admin's
too) under
var/shots/ for a person to look at."""

import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from tests.console.browser import (
    click_and_wait_for_new_page,
    needs_chromium,
    start_browser,
    submit_and_wait_for_new_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.subprocess, needs_chromium]

SHOTS = Path(__file__).resolve().parents[2] / "var" / "shots"


@pytest.fixture
def browser():
    driver, profile = start_browser()
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shoot(driver, name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def test_sign_in_with_sso_from_the_console_login_page(browser, sso, live_server, settings):
    from selenium.webdriver.common.by import By

    sso.put_user("carol", email="carol@example.com", groups=["evalsite-admins"])
    browser.get(f"{live_server.url}/console/login/")
    assert browser.find_elements(By.ID, "login-form")
    shoot(browser, "console-login-sso-and-password")

    settings.EVALSITE_PASSWORD_LOGIN = False
    browser.get(f"{live_server.url}/console/login/")
    assert not browser.find_elements(By.ID, "login-form")
    shoot(browser, "console-login-sso-only")
    browser.get(f"{live_server.url}/admin/login/")
    assert not browser.find_elements(By.ID, "login-form") and browser.find_elements(By.ID, "sso-login")
    shoot(browser, "admin-login-sso-only")
    browser.get(f"{live_server.url}/console/login/")

    click_and_wait_for_new_page(browser, browser.find_element(By.ID, "sso-login"))
    # The provider's own login page, on its own port.
    assert browser.current_url.startswith(sso.url) and "Test identity provider" in browser.page_source
    browser.find_element(By.NAME, "username").send_keys("carol")
    submit_and_wait_for_new_page(browser, browser.find_element(By.NAME, "password"), "provider-pass-1")
    assert "Request for Permission" in browser.page_source
    shoot(browser, "provider-consent")
    click_and_wait_for_new_page(browser, browser.find_element(By.NAME, "allow"))

    assert browser.current_url == f"{live_server.url}/console/"
    assert "carol" in browser.page_source
    shoot(browser, "console-after-sso")
    assert get_user_model().objects.get(username="carol").email == "carol@example.com"
