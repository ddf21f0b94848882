"""Headless Chromium for the console's browser tests (Debian's chromium and chromium-driver;
.ci/run installs them): the driver, and waits that tolerate a page being replaced.

A click or an Enter that submits a form returns before the next page is drawn, and the address bar
changes before the new document exists; an element found in that gap belongs to the old page and
goes stale. So every navigation a test starts by hand waits for the old document to go and the new
one to finish loading (`click_and_wait_for_new_page`, `submit_and_wait_for_new_page`), and reads
that may race a redraw go through `wait_for`."""

import shutil
import tempfile
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"

needs_chromium = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="chromium and chromedriver are not installed (Debian packages chromium and chromium-driver; "
    ".ci/run installs them)",
)


def start_browser():
    """A headless Chromium at laptop size, with a throwaway profile; returns (driver, profile dir)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="evalsite-chromium-")
    # No sandbox as root; no background network traffic (this machine has no network beyond loopback).
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1366,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    return driver, profile


def wait_for(predicate, timeout=20.0, message="condition"):
    """Poll until predicate() is truthy. Whatever the driver answers while a page is being replaced
    (an element not there yet or gone stale, or Chrome's "unhandled inspector error" about a node of
    the old document) counts as "not yet"; a predicate that never holds still fails, on time."""
    from selenium.common.exceptions import WebDriverException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except WebDriverException:
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message}")


# Set on the page's window before a navigation: a new document comes with a new window object, so
# the marker's absence means the old page is gone.
_MARK = "window.__evalsiteOldPage = true;"
_NEW_PAGE_LOADED = "return window.__evalsiteOldPage === undefined && document.readyState === 'complete';"


def _wait_for_new_page(driver):
    """Until the marked page has been replaced and the new one has loaded. It asks the window, not
    an element of the old page: mid-navigation ChromeDriver answers a question about an old element
    with a stale-element error, or with "unhandled inspector error: Node with given id does not
    belong to the document", depending on the moment; and a script may find no document to run in.
    Any such answer means "not yet"."""
    wait_for(lambda: driver.execute_script(_NEW_PAGE_LOADED), message="the next page to load")


def click_and_wait_for_new_page(driver, element):
    """Click something that loads a page, and return once the old page is gone and the new one loaded."""
    driver.execute_script(_MARK)
    element.click()
    _wait_for_new_page(driver)


def submit_and_wait_for_new_page(driver, field, *keys):
    """Type into a form field and press Enter (a login, a search), and return once the page the form
    leads to has loaded."""
    from selenium.webdriver.common.keys import Keys

    driver.execute_script(_MARK)
    field.send_keys(*keys, Keys.ENTER)
    _wait_for_new_page(driver)


def screenshot(driver, name: str, width: int = 1366):
    """The whole page at the given width (laptop 1366, tablet 820)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return Math.max(document.body.scrollHeight, 600)")
    driver.set_window_size(width, min(height + 120, 6000))
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(1366, 900)
