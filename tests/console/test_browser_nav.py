"""Issue 20, point 6: the console's header at laptop and desktop widths with a scrollbar showing
(the page taller than the window): no two of its items (site name, user links, theme toggle, the
navigation's links) overlap, and the navigation's links sit on one line, none broken over two.
Screenshots go to test-output/screenshots/ (nav-*.png)."""

import pytest
from django.conf import settings
from django.test import Client

from tests.console.browser import SCREENSHOTS, needs_chromium
from tests.core.factories import UserFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

# Every box the header draws: a staff user sees all ten navigation links (Launch a run and Admin
# included) and the longest user links.
HEADER_BOXES = """
const items = [...document.querySelectorAll(
    '#site-name a, #user-tools strong, #user-tools a, #logout-form button, #user-tools .theme-toggle, .console-nav a')];
return items.map(el => {
  const r = el.getBoundingClientRect();
  const text = el.matches('.theme-toggle') ? 'theme toggle' : el.textContent.trim();
  return {text: text, nav: !!el.closest('.console-nav'),
          left: r.left, top: r.top, right: r.right, bottom: r.bottom, lines: el.getClientRects().length};
});
"""


def _overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


# 1280 and 1440 are where it broke; 1024 (the admin's narrow layout starts at and below it) and 1920
# are the ends of the range it must hold over.
@pytest.mark.parametrize("width", [1024, 1280, 1440, 1920])
def test_header_items_never_overlap_with_a_scrollbar(browser, live_server, width):
    staff = UserFactory(username="a-reviewer-with-a-longish-name", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    browser.get(f"{live_server.url}/static/console/console.css")
    browser.add_cookie(
        {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "path": "/"}
    )
    # A window lower than the run launch form: the page scrolls, so a classic scrollbar takes its
    # width from the layout, which is what pushed "Admin" under "Dashboard" before.
    browser.set_window_size(width, 420)
    browser.get(f"{live_server.url}/console/runs/new/")
    assert browser.execute_script("return document.documentElement.scrollHeight > window.innerHeight")
    assert browser.execute_script("return document.documentElement.clientWidth < window.innerWidth"), (
        "no scrollbar takes layout width in this browser: the test would not show the bug"
    )

    boxes = browser.execute_script(HEADER_BOXES)
    nav = [box for box in boxes if box["nav"]]
    assert [box["text"] for box in nav] == [
        "Dashboard",
        "Runs",
        "Compare",
        "Traces",
        "RAG evaluations",
        "Review queues",
        "Ingestion",
        "Audit",
        "Launch a run",
        "Metrics query",
        "Admin",
    ]
    assert any(box["text"].startswith("Log out") for box in boxes)
    assert any(box["text"] == "theme toggle" for box in boxes)
    for n, first in enumerate(boxes):
        assert first["right"] > first["left"] and first["bottom"] > first["top"], f"{first['text']} is not drawn"
        for second in boxes[n + 1 :]:
            assert not _overlap(first, second), f"{first['text']!r} overlaps {second['text']!r} at {width} px"
    # One line: every link in one box, all at the same height.
    assert all(box["lines"] == 1 for box in nav), [box["text"] for box in nav if box["lines"] != 1]
    assert len({round(box["top"]) for box in nav}) == 1, (
        f"the navigation wraps at {width} px",
        [(b["text"], round(b["left"]), round(b["right"]), round(b["top"])) for b in nav],
    )
    assert max(box["right"] for box in boxes) <= browser.execute_script("return document.documentElement.clientWidth")

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"nav-{width}-scrollbar.png"))
