"""A real OpenID provider on loopback for the SSO tests (tests/oidc/provider: django-oidc-provider
in its own Django project and process, its own SQLite file and port), and evalsite's live server
configured to use it, as an operator would with EVALSITE_OIDC_*."""

import html
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from apps.core.auth.oidc import discovery
from apps.core.auth.oidc.config import parse_role_map
from apps.core.models import Project

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "evalsite-tests"
CLIENT_SECRET = "client-secret-that-must-never-show-7f3a9c"
ROLE_MAP = "default:admin=evalsite-admins,default:viewer=staff,default:reviewer=reviewers,default:editor=editors"


@dataclass
class Provider:
    url: str
    issuer: str
    private_key: rsa.RSAPrivateKey

    def put_user(self, username: str, *, password: str = "provider-pass-1", email: str = "", groups=()) -> None:
        response = httpx.post(
            f"{self.url}/testing/users",
            json={"username": username, "password": password, "email": email, "groups": list(groups)},
            timeout=10,
        )
        response.raise_for_status()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def oidc_provider(live_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("oidc-provider")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_path = folder / "signing-key.pem"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    port = _free_port()
    log_path = folder / "provider.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.oidc.provider.serve",
                str(port),
                str(folder / "provider.sqlite3"),
                f"{live_server.url}/oidc/callback/",
                CLIENT_ID,
                CLIENT_SECRET,
                str(key_path),
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/openid/.well-known/openid-configuration", timeout=2).raise_for_status()
            break
        except httpx.HTTPError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the test OpenID provider did not start:\n{log_path.read_text()}")
            time.sleep(0.2)
    yield Provider(url=url, issuer=f"{url}/openid", private_key=key)
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def sso(oidc_provider, settings, transactional_db):
    """SSO on, against the test provider, with password login still on (tests turn it off)."""
    settings.EVALSITE_OIDC_ISSUER = oidc_provider.issuer
    settings.EVALSITE_SSO_ENABLED = True
    settings.EVALSITE_OIDC_CLIENT_ID = settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.EVALSITE_OIDC_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.EVALSITE_OIDC_SCOPES = settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.EVALSITE_OIDC_ROLE_MAP = parse_role_map(ROLE_MAP)
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
        "apps.core.auth.oidc.backend.OidcBackend",
        "apps.core.admin.scoping.ProjectRoleBackend",
    ]
    # Transactional tests empty the database after each test, the migrations' `default` with it.
    Project.objects.get_or_create(slug="default", defaults={"name": "Default"})
    discovery.forget()
    yield oidc_provider
    discovery.forget()


@pytest.fixture
def password_login_off(sso, settings):
    settings.EVALSITE_PASSWORD_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "apps.core.auth.oidc.backend.OidcBackend",
        "apps.core.admin.scoping.ProjectRoleBackend",
    ]
    return sso


_HIDDEN = re.compile(r'<input name="(\w+)" type="hidden" value="([^"]*)"')


def provider_login(
    client: httpx.Client, response: httpx.Response, username: str, password: str, *, allow: bool = True
) -> httpx.Response:
    """From the provider's login page (where /oidc/authenticate/ leads), through its login form and its
    consent form (Authorize, or Decline with `allow=False`), following every redirect: back to
    evalsite's callback and where that leads."""
    assert "/accounts/login/" in str(response.url), response.url
    response = client.post(
        str(response.url),
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": client.cookies.get("provider_csrftoken", domain="127.0.0.1"),
        },
    )
    assert "Request for Permission" in response.text, response.text[:500]
    form = {name: html.unescape(value) for name, value in _HIDDEN.findall(response.text)}
    form["csrfmiddlewaretoken"] = client.cookies.get("provider_csrftoken", domain="127.0.0.1")
    if allow:
        form["allow"] = "Authorize"
    return client.post(str(response.url).split("?")[0], data=form)


def browser_like_client(*, follow_redirects: bool = True) -> httpx.Client:
    """A client with its own cookie jar, as one browser. `Connection: close`: a kept-alive connection
    would hold a live-server thread, and its database connection, open past the test (on PostgreSQL
    the test database then cannot be dropped)."""
    return httpx.Client(follow_redirects=follow_redirects, timeout=30, headers={"Connection": "close"})


def sso_login(base_url: str, username: str, password: str = "provider-pass-1") -> tuple[httpx.Client, httpx.Response]:
    client = browser_like_client()
    response = client.get(f"{base_url}/oidc/authenticate/", params={"next": "/console/"})
    return client, provider_login(client, response, username, password)
