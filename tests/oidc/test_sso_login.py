"""Single sign-on end to end: evalsite's live server and a real OpenID provider (django-oidc-provider,
tests/oidc/provider) talk over HTTP on loopback; a client follows the redirects through the provider's
login and consent forms as a browser would. Role map of these tests (conftest.ROLE_MAP):
default:admin=evalsite-admins, default:viewer=staff, default:reviewer=reviewers, default:editor=editors."""

import pytest
from django.contrib.auth import get_user_model

from apps.core.models import Membership, Project, SsoIdentity
from tests.bots.factories import BotFactory
from tests.oidc.conftest import browser_like_client, provider_login, sso_login

pytestmark = pytest.mark.subprocess


def role_in_default(username: str) -> str | None:
    return (
        Membership.objects.filter(user__username=username, project__slug="default")
        .values_list("role", flat=True)
        .first()
    )


def test_a_first_login_creates_the_user_with_the_role_of_their_groups(sso, live_server):
    sso.put_user("alice", email="alice@example.com", groups=["staff"])

    client, response = sso_login(live_server.url, "alice")

    assert response.status_code == 200
    assert response.url.path == "/console/"
    user = get_user_model().objects.get(username="alice")
    assert user.email == "alice@example.com"
    assert not user.is_staff and not user.is_superuser
    identity = SsoIdentity.objects.get(user=user)
    assert identity.issuer == sso.issuer and identity.last_groups == ["staff"]
    assert role_in_default("alice") == "viewer"
    # The session works on the next request: the console knows who this is.
    assert "alice" in client.get(f"{live_server.url}/console/").text


def test_the_role_follows_the_groups_at_the_next_login(sso, live_server):
    sso.put_user("bruno", groups=["staff"])
    sso_login(live_server.url, "bruno")
    assert role_in_default("bruno") == "viewer"

    # Promoted at the provider: in both staff and evalsite-admins, the higher role wins.
    sso.put_user("bruno", groups=["staff", "evalsite-admins"])
    sso_login(live_server.url, "bruno")
    assert role_in_default("bruno") == "admin"

    sso.put_user("bruno", groups=["reviewers"])
    sso_login(live_server.url, "bruno")
    assert role_in_default("bruno") == "reviewer"
    assert get_user_model().objects.filter(username__startswith="bruno").count() == 1


def test_a_user_without_a_mapped_group_is_refused_but_can_be_placed_by_hand(sso, live_server):
    sso.put_user("chen", groups=["marketing"])

    client, response = sso_login(live_server.url, "chen")

    assert response.url.path == "/console/login/" and response.url.params["sso"] == "no-project"
    assert "your groups give you no evalsite project yet" in response.text
    assert client.get(f"{live_server.url}/console/").url.path == "/console/login/"
    # The account exists, with no project: a project admin can add it by username.
    user = get_user_model().objects.get(username="chen")
    assert not Membership.objects.filter(user=user).exists()

    Membership.objects.create(user=user, project=Project.objects.get(slug="default"), role="viewer")
    client, response = sso_login(live_server.url, "chen")
    assert response.url.path == "/console/"


def test_the_admin_through_sso_for_a_staff_user(sso, live_server):
    # SSO never makes anyone staff; a superuser does, by hand, and later logins keep it.
    sso.put_user("dora", groups=["evalsite-admins"])
    sso_login(live_server.url, "dora")
    get_user_model().objects.filter(username="dora").update(is_staff=True)

    client = browser_like_client()
    admin_login = client.get(f"{live_server.url}/admin/login/", params={"next": "/admin/"})
    assert 'id="sso-login"' in admin_login.text
    response = client.get(f"{live_server.url}/oidc/authenticate/", params={"next": "/admin/"})
    response = provider_login(client, response, "dora", "provider-pass-1")

    assert response.url.path == "/admin/" and 'id="site-name"' in response.text
    assert get_user_model().objects.get(username="dora").is_staff


def test_an_sso_editor_works_in_the_admin_by_role_without_being_staff(password_login_off, live_server):
    """SSO never makes anyone staff, and with password login off Django's own permission backend is
    not even there: the admin lets the member in, and their role (editor in `default`) decides."""
    bot = BotFactory(name="DefaultBot")
    password_login_off.put_user("gina", groups=["editors"])
    client, response = sso_login(live_server.url, "gina")
    assert response.url.path == "/console/"
    user = get_user_model().objects.get(username="gina")
    assert not user.is_staff and not user.is_superuser and role_in_default("gina") == "editor"
    assert 'href="/admin/"' in response.text

    index = client.get(f"{live_server.url}/admin/")
    assert index.url.path == "/admin/" and "/admin/bots/bot/" in index.text
    change = client.get(f"{live_server.url}/admin/bots/bot/{bot.pk}/change/")
    assert change.status_code == 200 and 'name="_save"' in change.text
    # Deleting is an admin's; the pages that are not the project's (users, keys) are not hers.
    assert client.get(f"{live_server.url}/admin/bots/bot/{bot.pk}/delete/").status_code == 403
    assert client.get(f"{live_server.url}/admin/auth/user/").status_code == 403
    assert client.get(f"{live_server.url}/admin/core/apikey/").status_code == 403


def test_declining_consent_at_the_provider_logs_nobody_in(sso, live_server):
    sso.put_user("emil", groups=["staff"])
    client = browser_like_client()
    response = client.get(f"{live_server.url}/oidc/authenticate/")
    response = provider_login(client, response, "emil", "provider-pass-1", allow=False)

    assert response.url.path == "/console/login/" and response.url.params["sso"] == "failed"
    assert not get_user_model().objects.filter(username="emil").exists()


def test_deactivating_a_user_ends_their_sso_session(sso, live_server):
    sso.put_user("fay", groups=["staff"])
    client, response = sso_login(live_server.url, "fay")
    assert response.url.path == "/console/"
    get_user_model().objects.filter(username="fay").update(is_active=False)
    assert client.get(f"{live_server.url}/console/").url.path == "/console/login/"
