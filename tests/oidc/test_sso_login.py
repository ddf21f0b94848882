"""Single sign-on end to end: evalsite's live server and a real OpenID provider (django-oidc-provider,
tests/oidc/provider) talk over HTTP on loopback; a client follows the redirects through the provider's
login and consent forms as a browser would."""

import pytest
from django.contrib.auth import get_user_model

from apps.core.models import SsoIdentity
from tests.oidc.conftest import sso_login

pytestmark = pytest.mark.subprocess


def test_a_first_login_creates_the_user_from_the_claims(sso, live_server):
    sso.put_user("alice", email="alice@example.com", groups=["staff"])

    client, response = sso_login(live_server.url, "alice")

    assert response.status_code == 200
    assert response.url.path == "/console/"
    user = get_user_model().objects.get(username="alice")
    assert user.email == "alice@example.com"
    assert not user.is_staff and not user.is_superuser
    identity = SsoIdentity.objects.get(user=user)
    assert identity.issuer == sso.issuer and identity.last_groups == ["staff"]
    # The session works on the next request: the console knows who this is.
    assert "alice" in client.get(f"{live_server.url}/console/").text
