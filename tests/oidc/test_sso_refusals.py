"""Logins that must fail, performed against the real provider: a forged, expired, misaddressed or
HS256 id token in the token endpoint's answer, a callback with a state this browser never got or
already used, a wrong client secret. Each ends on the login page with nobody logged in, and the
client secret shows in no page and no log line."""

import base64
import logging
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model

from apps.core.auth.oidc.backend import OidcBackend
from tests.oidc.conftest import CLIENT_ID, CLIENT_SECRET, browser_like_client, provider_login, sso_login

pytestmark = pytest.mark.subprocess


def provider_kid(provider) -> str:
    return httpx.get(f"{provider.issuer}/jwks").json()["keys"][0]["kid"]


def assert_refused(client: httpx.Client, response: httpx.Response, live_server):
    assert response.url.path == "/console/login/" and response.url.params.get("sso") == "failed"
    assert "Single sign-on did not complete" in response.text
    # Not logged in: the console sends this browser back to the login page.
    assert client.get(f"{live_server.url}/console/").url.path == "/console/login/"
    assert not get_user_model().objects.filter(username="mallory").exists()


@pytest.fixture
def replace_id_token(monkeypatch):
    """Swap the id token in the provider's real token answer for one the test makes from its claims
    (nonce included, so only the tampering is wrong)."""

    def install(make_token):
        real_get_token = OidcBackend.get_token

        def get_token(self, payload):
            answer = real_get_token(self, payload)
            claims = jwt.decode(answer["id_token"], options={"verify_signature": False})
            answer["id_token"] = make_token(claims)
            return answer

        monkeypatch.setattr(OidcBackend, "get_token", get_token)

    return install


def test_an_id_token_signed_by_another_key_is_refused(sso, live_server, replace_id_token):
    sso.put_user("mallory", groups=["evalsite-admins"])
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = provider_kid(sso)
    # The provider's key id, another key: only the signature can tell.
    replace_id_token(lambda claims: jwt.encode(claims, forger, algorithm="RS256", headers={"kid": kid}))
    assert_refused(*sso_login(live_server.url, "mallory"), live_server)


def test_an_expired_id_token_is_refused(sso, live_server, replace_id_token):
    sso.put_user("mallory", groups=["staff"])
    kid = provider_kid(sso)
    hour_ago = int(time.time()) - 3600
    replace_id_token(
        lambda claims: jwt.encode(
            {**claims, "iat": hour_ago - 600, "exp": hour_ago}, sso.private_key, algorithm="RS256", headers={"kid": kid}
        )
    )
    assert_refused(*sso_login(live_server.url, "mallory"), live_server)


def test_an_id_token_for_another_client_is_refused(sso, live_server, replace_id_token):
    # Signed by the provider itself, for another application: the library alone does not check `aud`.
    sso.put_user("mallory", groups=["staff"])
    kid = provider_kid(sso)
    replace_id_token(
        lambda claims: jwt.encode(
            {**claims, "aud": "another-app"}, sso.private_key, algorithm="RS256", headers={"kid": kid}
        )
    )
    assert_refused(*sso_login(live_server.url, "mallory"), live_server)


def test_an_id_token_from_another_issuer_is_refused(sso, live_server, replace_id_token):
    sso.put_user("mallory", groups=["staff"])
    kid = provider_kid(sso)
    replace_id_token(
        lambda claims: jwt.encode(
            {**claims, "iss": "https://evil.example"}, sso.private_key, algorithm="RS256", headers={"kid": kid}
        )
    )
    assert_refused(*sso_login(live_server.url, "mallory"), live_server)


def test_an_hs256_token_made_with_the_client_secret_is_refused(sso, live_server, replace_id_token):
    # Algorithm confusion: whoever knows (or guesses) the secret must not be able to mint logins.
    sso.put_user("mallory", groups=["staff"])
    replace_id_token(lambda claims: jwt.encode(claims, CLIENT_SECRET, algorithm="HS256"))
    assert_refused(*sso_login(live_server.url, "mallory"), live_server)


def test_a_callback_with_a_state_this_browser_was_not_given_is_refused(sso, live_server):
    client = browser_like_client(follow_redirects=False)
    # The browser has a session with a real state in it (the login started), but the callback names another.
    started = client.get(f"{live_server.url}/oidc/authenticate/")
    assert started.status_code == 302 and "state=" in started.headers["location"]
    response = client.get(f"{live_server.url}/oidc/callback/", params={"code": "stolen-code", "state": "not-ours"})
    assert response.status_code == 302 and response.headers["location"] == "/console/login/?sso=failed"
    assert client.get(f"{live_server.url}/console/").status_code == 302


def test_a_callback_replayed_after_the_login_is_refused(sso, live_server):
    sso.put_user("mallory", groups=["staff"])
    client = browser_like_client()
    callbacks = []
    client.event_hooks["request"] = [
        lambda request: callbacks.append(str(request.url)) if "/oidc/callback/" in request.url.path else None
    ]
    response = client.get(f"{live_server.url}/oidc/authenticate/")
    assert provider_login(client, response, "mallory", "provider-pass-1").url.path == "/console/"
    # Another browser replaying the same callback URL (code and state, from a log or a referrer).
    other = browser_like_client()
    replay = other.get(callbacks[-1])
    assert (
        replay.url.path == "/console/login/" and other.get(f"{live_server.url}/console/").url.path == "/console/login/"
    )


def test_a_wrong_client_secret_fails_without_showing_either_secret(sso, live_server, settings, caplog):
    sso.put_user("mallory", groups=["staff"])
    settings.OIDC_RP_CLIENT_SECRET = "wrong-secret-also-private-51e2"
    with caplog.at_level(logging.DEBUG):
        client, response = sso_login(live_server.url, "mallory")
    assert_refused(client, response, live_server)
    assert "single sign-on refused: the provider answered HTTP" in caplog.text
    basic = base64.b64encode(f"{CLIENT_ID}:wrong-secret-also-private-51e2".encode()).decode()
    for secret in ("wrong-secret-also-private-51e2", CLIENT_SECRET, basic):
        assert secret not in caplog.text and secret not in response.text
