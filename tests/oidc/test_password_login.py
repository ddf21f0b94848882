"""EVALSITE_PASSWORD_LOGIN=0: the console's and the admin's password forms are gone and a password
POST is refused, the SSO button stays; API keys keep working. And with SSO off (no issuer), no SSO
button and no SSO endpoints."""

import pytest
from django.contrib.auth import get_user_model

from apps.core.auth.oidc import discovery
from tests.core.factories import ApiKeyFactory, client_with_key

ISSUER = "http://127.0.0.1:9/never-contacted"


@pytest.fixture
def sso_configured(settings):
    """SSO on as far as the pages go; no provider is contacted by these tests."""
    settings.EVALSITE_OIDC_ISSUER = ISSUER
    settings.EVALSITE_SSO_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = "evalsite"
    settings.OIDC_RP_CLIENT_SECRET = "secret-not-shown"
    discovery.forget()


@pytest.fixture
def password_off(settings, sso_configured):
    settings.EVALSITE_PASSWORD_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "apps.core.auth.oidc.backend.OidcBackend",
    ]


@pytest.fixture
def known_user(db):
    return get_user_model().objects.create_user("bob", password="right-pass-1", is_staff=True)


class TestPasswordLoginOff:
    def test_the_console_login_page_has_only_the_sso_button(self, client, password_off):
        page = client.get("/console/login/?next=/console/runs/").content.decode()
        assert 'id="login-form"' not in page and 'name="password"' not in page
        assert 'id="sso-login"' in page and "/oidc/authenticate/?next=/console/runs/" in page

    def test_a_console_password_post_is_refused(self, client, password_off, known_user):
        response = client.post("/console/login/", {"username": "bob", "password": "right-pass-1"})
        assert response.status_code == 403
        assert "_auth_user_id" not in client.session

    def test_the_admin_login_page_has_only_the_sso_button(self, client, password_off):
        page = client.get("/admin/login/?next=/admin/").content.decode()
        assert 'id="login-form"' not in page and 'name="password"' not in page
        assert 'id="sso-login"' in page

    def test_an_admin_password_post_is_refused(self, client, password_off, known_user):
        response = client.post("/admin/login/", {"username": "bob", "password": "right-pass-1", "next": "/admin/"})
        assert response.status_code == 403
        assert client.get("/admin/").status_code == 302

    def test_no_backend_accepts_a_password(self, password_off, known_user, rf):
        # Whatever door a password comes through (a view added later, a DRF login), nothing checks it.
        from django.contrib.auth import authenticate

        assert authenticate(rf.get("/"), username="bob", password="right-pass-1") is None

    def test_api_keys_are_not_logins(self, password_off, db):
        assert client_with_key(ApiKeyFactory()).get("/api/v1/bots").status_code == 200


class TestPasswordLoginOn:
    def test_both_ways_are_offered(self, client, sso_configured):
        page = client.get("/console/login/").content.decode()
        assert 'id="login-form"' in page and 'id="sso-login"' in page
        assert 'id="login-form"' in client.get("/admin/login/").content.decode()

    def test_a_password_still_logs_in(self, client, sso_configured, known_user):
        response = client.post("/console/login/", {"username": "bob", "password": "right-pass-1"})
        assert response.status_code == 302 and client.session["_auth_user_id"] == str(known_user.pk)

    def test_an_unreachable_provider_is_a_refused_login_not_an_error(self, client, sso_configured):
        response = client.get("/oidc/authenticate/")
        assert response.status_code == 302 and response["Location"] == "/console/login/?sso=failed"
        page = client.get(response["Location"]).content.decode()
        assert "Single sign-on did not complete" in page and "secret-not-shown" not in page


class TestSsoOff:
    def test_no_button_and_no_endpoints(self, client, db):
        assert 'id="sso-login"' not in client.get("/console/login/").content.decode()
        assert 'id="sso-login"' not in client.get("/admin/login/").content.decode()
        assert client.get("/oidc/authenticate/").status_code == 404
        assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


def test_turning_password_login_off_ends_sessions_a_password_opened(client, settings, known_user, sso_configured):
    assert client.post("/console/login/", {"username": "bob", "password": "right-pass-1"}).status_code == 302
    assert client.get("/console/").status_code == 200
    settings.EVALSITE_PASSWORD_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "apps.core.auth.oidc.backend.OidcBackend",
    ]
    # The session names the password backend, which is no longer listed: it is anonymous now.
    assert client.get("/console/")["Location"].startswith("/console/login/")
