"""The console's project page (/console/project/settings/): a project's admins see and change its
members and its retention and redaction settings, with the API's validation; nobody else does,
and nothing of another project shows."""

import pytest

from apps.core.models import AuditEvent, Membership, ProjectRole
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

PAGE = "/console/project/settings/"


@pytest.fixture
def team():
    return ProjectFactory(slug="team", name="Team")


def signed_in(client, project, role, username):
    user = UserFactory(username=username)
    MembershipFactory(project=project, user=user, role=role)
    client.force_login(user)
    return user


def test_an_admin_sees_the_members_and_the_settings_of_their_project_only(client, team):
    signed_in(client, team, ProjectRole.ADMIN, "alice")
    MembershipFactory(project=team, user=UserFactory(username="bob"), role=ProjectRole.VIEWER)
    MembershipFactory(project=ProjectFactory(slug="other", name="Other"), user=UserFactory(username="carol"))
    page = client.get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-username="alice"' in html and 'data-username="bob"' in html
    assert "carol" not in html and "Other" not in html
    assert 'id="project-settings"' in html


@pytest.mark.parametrize("role", [ProjectRole.VIEWER, ProjectRole.REVIEWER, ProjectRole.EDITOR])
def test_below_admin_the_page_and_its_actions_are_refused(client, team, role):
    signed_in(client, team, role, "dave")
    assert client.get(PAGE).status_code == 403
    assert client.post("/console/project/members/", {"username": "dave", "role": "admin"}).status_code == 403
    assert Membership.objects.get(user__username="dave").role == role
    assert client.post(PAGE, {"retention_days": "1"}).status_code == 403
    team.refresh_from_db()
    assert team.retention_days is None


def test_members_are_added_changed_and_removed_and_each_change_is_audited(client, team):
    signed_in(client, team, ProjectRole.ADMIN, "alice")
    UserFactory(username="bob")
    assert client.post("/console/project/members/", {"username": "bob", "role": "reviewer"}).status_code == 302
    assert Membership.objects.get(project=team, user__username="bob").role == ProjectRole.REVIEWER
    assert client.post("/console/project/members/", {"username": "bob", "role": "editor"}).status_code == 302
    assert Membership.objects.get(project=team, user__username="bob").role == ProjectRole.EDITOR
    assert client.post("/console/project/members/remove/", {"username": "bob"}).status_code == 302
    assert not Membership.objects.filter(project=team, user__username="bob").exists()
    events = AuditEvent.objects.filter(project=team, object_type="membership", actor="alice")
    assert events.count() == 3


def test_an_unknown_user_is_an_error_on_the_page(client, team):
    signed_in(client, team, ProjectRole.ADMIN, "alice")
    response = client.post("/console/project/members/", {"username": "nobody", "role": "viewer"})
    assert response.status_code == 422
    assert "No user nobody" in response.content.decode()


def test_settings_are_saved_as_the_api_would(client, team):
    signed_in(client, team, ProjectRole.ADMIN, "alice")
    body = {
        "retention_days": "30",
        "run_retention_days": "",
        "redaction_enabled": "on",
        "detectors": ["email", "secret"],
        "custom_patterns": "ACME-\\d{6}\n\n",
        "phone_regions": "fr de",
    }
    assert client.post(PAGE, body).status_code == 302
    team.refresh_from_db()
    assert (team.retention_days, team.run_retention_days) == (30, None)
    assert team.redaction == {
        "enabled": True,
        "detectors": ["email", "secret"],
        "custom_patterns": ["ACME-\\d{6}"],
        "phone_regions": ["FR", "DE"],
    }
    assert AuditEvent.objects.filter(project=team, object_type="project", action="update").exists()


def test_a_backtracking_pattern_is_refused_and_nothing_changes(client, team):
    signed_in(client, team, ProjectRole.ADMIN, "alice")
    response = client.post(PAGE, {"retention_days": "30", "redaction_enabled": "on", "custom_patterns": "(a+)+$"})
    assert response.status_code == 422
    assert "custom_patterns" in response.content.decode()
    team.refresh_from_db()
    assert team.retention_days is None and team.redaction["enabled"] is False
