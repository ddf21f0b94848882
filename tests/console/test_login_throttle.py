"""Issue 21 point 6: 40 wrong passwords and then the right one logged in, at /console/login/ and at
/admin/login/. After EVALSITE_LOGIN_FAILURE_LIMIT (10) failures for a username, or from an address,
within EVALSITE_LOGIN_COOLOFF_MINUTES (15), that login is refused for the cool-off, the right password
included, with a page that says so. API keys (256-bit) are not throttled: a wrong one stays a 401."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.utils import timezone

from tests.core.factories import ApiKeyFactory, UserFactory, client_with_key

pytestmark = pytest.mark.django_db
CONSOLE, ADMIN = "/console/login/", "/admin/login/"
RIGHT = "the-right-password-1"


@pytest.fixture
def alice():
    return UserFactory(username="alice", is_staff=True, is_superuser=True, password=RIGHT)


def log_in(client, door, username, password, address="10.0.0.1"):
    return client.post(door, {"username": username, "password": password}, REMOTE_ADDR=address)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def fail(client, door, username, times, address="10.0.0.1"):
    """`times` wrong passwords: the login form again, except that the failure reaching the limit is
    answered with the lockout page already."""
    for _ in range(times):
        response = log_in(client, door, username, "wrong", address)
        assert response.status_code in (200, 429) and not logged_in(client)
    return response


def assert_locked_out(response, client):
    assert response.status_code == 429
    page = response.content.decode()
    assert 'id="lockout"' in page and "Too many failed logins" in page and "15 minutes" in page
    assert "the right password included" in page
    assert not logged_in(client)


def test_ten_failures_lock_the_username_at_both_doors_right_password_included(client, alice):
    assert_locked_out(fail(client, CONSOLE, "alice", 10), client)
    assert_locked_out(log_in(client, CONSOLE, "alice", RIGHT), client)
    # The admin is the other door to the same account, from another address too.
    assert_locked_out(log_in(client, ADMIN, "alice", RIGHT, address="10.9.9.9"), client)
    assert client.get("/console/").status_code == 302  # still sent to the login page


def test_nine_failures_then_the_right_password_logs_in(client, alice):
    assert fail(client, ADMIN, "alice", 9).status_code == 200
    response = log_in(client, CONSOLE, "alice", RIGHT)
    assert response.status_code == 302 and logged_in(client)


def test_ten_failures_from_one_address_lock_every_username_there(client, alice):
    for n in range(10):
        fail(client, CONSOLE, f"guess-{n}", 1, address="10.0.0.7")
    assert_locked_out(log_in(client, CONSOLE, "alice", RIGHT, address="10.0.0.7"), client)
    # From another address, alice (who failed nothing) logs in.
    response = log_in(client, CONSOLE, "alice", RIGHT, address="10.0.0.8")
    assert response.status_code == 302 and logged_in(client)


def test_the_lockout_ends_after_the_cool_off(client, alice):
    fail(client, CONSOLE, "alice", 10)
    assert_locked_out(log_in(client, CONSOLE, "alice", RIGHT), client)
    # Move the failures 16 minutes into the past: the cool-off (15) is over.
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    response = log_in(client, CONSOLE, "alice", RIGHT)
    assert response.status_code == 302 and logged_in(client)


def test_attempts_while_locked_out_do_not_extend_the_lockout(client, alice):
    fail(client, CONSOLE, "alice", 10)
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=14))
    for _ in range(5):
        assert_locked_out(log_in(client, CONSOLE, "alice", "wrong"), client)
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert log_in(client, CONSOLE, "alice", RIGHT).status_code == 302


def test_api_keys_are_not_throttled(client, alice):
    key_client = client_with_key(ApiKeyFactory(user=alice))
    fail(client, CONSOLE, "alice", 10)
    assert_locked_out(log_in(client, CONSOLE, "alice", RIGHT), client)
    # Her key still works: a 256-bit key cannot be guessed, and a locked login must not stop her agents.
    assert key_client.get("/api/v1/runs").status_code == 200
    wrong = client_with_key(ApiKeyFactory(user__username="someone"))
    wrong.credentials(HTTP_AUTHORIZATION="Bearer " + "x" * 43)
    for _ in range(15):
        assert wrong.get("/api/v1/runs", REMOTE_ADDR="10.0.0.1").status_code == 401
    assert not AccessAttempt.objects.filter(username="someone").exists()


def test_the_lockout_settings_come_from_the_environment(settings):
    from django.conf import settings as live

    assert live.AXES_FAILURE_LIMIT == live.EVALSITE_LOGIN_FAILURE_LIMIT == 10
    assert live.AXES_COOLOFF_TIME == timedelta(minutes=live.EVALSITE_LOGIN_COOLOFF_MINUTES) == timedelta(minutes=15)


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted(settings):
    from django.test import RequestFactory

    from apps.core.auth.login_throttle import client_address

    request = RequestFactory().post(CONSOLE, REMOTE_ADDR="10.1.1.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    settings.EVALSITE_TRUSTED_PROXY_COUNT = 0
    assert client_address(request) == "10.1.1.1"  # no proxy trusted: the header is the client's say-so
    settings.EVALSITE_TRUSTED_PROXY_COUNT = 1
    assert client_address(request) == "203.0.113.9"  # what the one proxy saw, not the spoofable left part
    settings.EVALSITE_TRUSTED_PROXY_COUNT = 3
    assert client_address(request) == "10.1.1.1"  # fewer entries than proxies: not to be trusted
