"""@scope_required: every console view that acts refuses a signed-in user without the scope with the
console's 403 page, before it reads or writes anything, and lets a user with the scope through to
the view itself (whose own answer, a 404 for an unknown id here, shows that it ran)."""

import uuid

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from apps.console.views.common import scope_required

pytestmark = pytest.mark.django_db

UNKNOWN = uuid.uuid4()

# (method, url, scope, what the view answers a staff user for this request)
ACTING_VIEWS = [
    ("get", "/console/runs/new/", "evaluate", 200),
    ("post", f"/console/runs/{UNKNOWN}/rerun/", "evaluate", 404),
    ("post", f"/console/runs/{UNKNOWN}/cancel/", "evaluate", 404),
    ("post", f"/console/results/{UNKNOWN}/", "review", 404),
    ("post", "/console/traces/no-such-session/", "evaluate", 404),
    ("post", "/console/queues/", "review", 200),  # the form, with its errors
    ("post", "/console/queues/add/", "review", 404),
    ("post", "/console/queues/999999/fill/", "review", 404),
    ("post", "/console/queues/999999/items/1/", "review", 404),
    ("post", "/console/queues/999999/items/1/assign/", "review", 404),
    ("post", "/console/queues/999999/items/1/claim/", "review", 404),
]


@pytest.mark.parametrize(("method", "url", "scope", "_"), ACTING_VIEWS)
def test_a_user_without_the_scope_gets_the_console_403_page(reader_client, method, url, scope, _):
    response = getattr(reader_client, method)(url, HTTP_REFERER="http://testserver/console/runs/")
    assert response.status_code == 403
    assert "console/forbidden.html" in [t.name for t in response.templates]
    # The page names the scope and offers the way back to where the user came from.
    assert response.context["scope"] == scope
    assert response.context["back_url"] == "http://testserver/console/runs/"


@pytest.mark.parametrize(("method", "url", "scope", "answer"), ACTING_VIEWS)
def test_a_user_with_the_scope_reaches_the_view(staff_client, method, url, scope, answer):
    response = getattr(staff_client, method)(url)
    assert response.status_code == answer
    assert "console/forbidden.html" not in [t.name for t in response.templates]


@pytest.mark.parametrize("url", ["/console/queues/", "/console/traces/no-such-session/"])
def test_pages_whose_post_acts_stay_readable_without_the_scope(reader_client, url):
    # Only the POST needs the scope: the reader's GET reaches the view (a 404 for the unknown trace).
    assert reader_client.get(url).status_code in (200, 404)
    assert "console/forbidden.html" not in [t.name for t in reader_client.get(url).templates]


def test_the_decorator_keeps_the_view_name_and_checks_only_the_named_methods(reader_user):
    @scope_required("configure", methods=("POST",))
    def review(request):
        return HttpResponse("reviewed")

    assert review.__name__ == "review"  # URL names and tracebacks keep the view's own name
    get = RequestFactory().get("/")
    get.user = reader_user
    assert review(get).content == b"reviewed"
