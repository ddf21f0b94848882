import pytest
from django.contrib.auth import get_user_model
from django.test import Client


@pytest.fixture
def browser(db):
    # A reviewer logged in to the console: session cookie, CSRF checks on as in a real browser.
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_user("reviewer", password="pw"))
    return client


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
def test_unknown_api_path_is_a_json_404_for_any_method_even_with_a_session(browser, method):
    # It was an HTML CSRF 403 for unsafe methods: there is nothing to protect at a path that does not exist.
    send = getattr(browser, method)
    response = (
        send("/api/v1/no-such-thing")
        if method == "get"
        else send("/api/v1/no-such-thing", data="{}", content_type="application/json")
    )
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "No API endpoint at /api/v1/no-such-thing"}


def test_known_api_paths_still_check_csrf_for_session_users(browser):
    response = browser.post("/api/v1/bots", data="{}", content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/api/v1/trace/history/%0A", "/api/v1/trace/history/ab%0Acd", "/api/%0A"])
def test_an_api_path_with_a_line_break_is_a_json_404_too(browser, path):
    # "api/<path:rest>" does not match a line break (its pattern is ".+"), so schemathesis got
    # Django's HTML 404 page from GET /api/v1/trace/history/%F3...%0A...; the 404 handler answers
    # JSON for every API path, whatever matched or did not.
    response = browser.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"].startswith("No API endpoint at /api/")


def test_a_page_path_that_matches_nothing_is_still_the_html_404(browser):
    response = browser.get("/console-nothing%0A")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
