"""/api/v1/projects: who sees which project, who may create and change them, and their members."""

import pytest
from rest_framework.test import APIClient

from apps.core.models import Membership, Project, ProjectRole
from tests.core.factories import (
    ApiKeyFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    client_with_key,
    project_key_client,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    return ProjectFactory(name="Team", slug="team")


@pytest.fixture
def superuser_api():
    root = UserFactory(username="root", is_staff=True, is_superuser=True, password=None)
    return client_with_key(ApiKeyFactory(user=root))


def _session(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


class TestWhoSeesWhat:
    def test_a_key_sees_only_its_own_project(self, team):
        other = ProjectFactory(slug="other")
        api = project_key_client(team, role=ProjectRole.VIEWER)
        assert [p["slug"] for p in api.get("/api/v1/projects").json()] == ["team"]
        assert api.get("/api/v1/projects/team").json()["name"] == "Team"
        # Another project answers exactly as a project that does not exist: existence does not leak.
        hidden = api.get(f"/api/v1/projects/{other.slug}")
        missing = api.get("/api/v1/projects/nope")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["detail"] == f"No project {other.slug}"
        assert api.get(f"/api/v1/projects/{other.slug}/members").status_code == 404

    def test_even_a_superusers_key_acts_in_its_project_only(self, team, superuser_api):
        assert [p["slug"] for p in superuser_api.get("/api/v1/projects").json()] == ["default"]
        assert superuser_api.get("/api/v1/projects/team").status_code == 404

    def test_a_person_sees_their_projects_and_a_superuser_all(self, team):
        ProjectFactory(slug="other", name="Other")
        member = UserFactory()
        MembershipFactory(project=team, user=member)
        assert [p["slug"] for p in _session(member).get("/api/v1/projects").json()] == ["team"]
        root = UserFactory(is_superuser=True, is_staff=True)
        assert {p["slug"] for p in _session(root).get("/api/v1/projects").json()} == {"default", "other", "team"}

    def test_the_answer_shows_the_settings(self, team):
        body = project_key_client(team, role=ProjectRole.VIEWER).get("/api/v1/projects/team").json()
        assert body["redaction"] == {
            "enabled": False,
            "detectors": [],
            "custom_patterns": [],
            "phone_regions": ["US", "GB"],
        }
        assert body["retention_days"] is None and body["run_retention_days"] is None


class TestCreate:
    def test_a_superuser_creates_a_project(self, superuser_api):
        response = superuser_api.post("/api/v1/projects", {"name": "Payments", "slug": "payments"}, format="json")
        assert response.status_code == 201, response.content
        assert Project.objects.get(slug="payments").name == "Payments"

    def test_a_taken_slug_is_a_conflict(self, superuser_api, team):
        response = superuser_api.post("/api/v1/projects", {"name": "Again", "slug": "team"}, format="json")
        assert response.status_code == 409
        assert "team" in response.json()["detail"]

    def test_a_project_admin_who_is_not_superuser_cannot_create(self, team):
        api = project_key_client(team, role=ProjectRole.ADMIN)
        response = api.post("/api/v1/projects", {"name": "Mine", "slug": "mine"}, format="json")
        assert response.status_code == 403
        assert not Project.objects.filter(slug="mine").exists()

    def test_a_bad_slug_is_refused(self, superuser_api):
        response = superuser_api.post("/api/v1/projects", {"name": "X", "slug": "Not A Slug"}, format="json")
        assert response.status_code == 422


class TestPatch:
    def test_an_admin_changes_retention_and_redaction(self, team):
        api = project_key_client(team, role=ProjectRole.ADMIN)
        response = api.patch(
            "/api/v1/projects/team",
            {
                "retention_days": 30,
                "redaction": {
                    "enabled": True,
                    "detectors": ["secret", "email", "email"],
                    "custom_patterns": [r"ACME-\d+"],
                },
            },
            format="json",
        )
        assert response.status_code == 200, response.content
        team.refresh_from_db()
        assert team.retention_days == 30 and team.run_retention_days is None
        # Canonical order, once each, so equal settings are stored equal.
        assert team.redaction == {"enabled": True, "detectors": ["email", "secret"], "custom_patterns": [r"ACME-\d+"]}
        assert team.name == "Team", "a field not sent is left alone"

    def test_null_retention_keeps_forever(self, team):
        team.retention_days = 7
        team.save()
        api = project_key_client(team, role=ProjectRole.ADMIN)
        assert api.patch("/api/v1/projects/team", {"retention_days": None}, format="json").status_code == 200
        team.refresh_from_db()
        assert team.retention_days is None

    @pytest.mark.parametrize(
        "redaction",
        [
            {"enabled": "yes"},
            {"enabled": True, "detectors": ["passport"]},
            {"enabled": True, "custom_patterns": ["("]},
            {"enabled": True, "custom_patterns": ["a" * 201]},
            {"enabled": True, "custom_patterns": [f"p{i}" for i in range(21)]},
            {"enabled": True, "unknown": 1},
            # Catastrophic backtracking on a long line an agent's user typed: pinned a worker.
            {"enabled": True, "custom_patterns": ["(a+)+$"]},
            {"enabled": True, "custom_patterns": [r"(\w+\s?)+$"]},
            {"enabled": True, "detectors": ["phone"], "phone_regions": ["XX"]},
            None,
        ],
    )
    def test_a_malformed_redaction_is_refused_and_nothing_changes(self, team, redaction):
        api = project_key_client(team, role=ProjectRole.ADMIN)
        response = api.patch("/api/v1/projects/team", {"redaction": redaction}, format="json")
        assert response.status_code == 422, response.content
        assert "detail" in response.json()
        team.refresh_from_db()
        assert team.redaction["enabled"] is False

    def test_phone_regions_are_a_setting(self, team):
        api = project_key_client(team, role=ProjectRole.ADMIN)
        body = {"enabled": True, "detectors": ["phone"], "phone_regions": ["FR", "DE"]}
        response = api.patch("/api/v1/projects/team", {"redaction": body}, format="json")
        assert response.status_code == 200, response.content
        team.refresh_from_db()
        assert team.redaction["phone_regions"] == ["FR", "DE"]

    def test_an_editor_cannot_change_settings(self, team):
        api = project_key_client(team, role=ProjectRole.EDITOR)
        assert api.patch("/api/v1/projects/team", {"retention_days": 1}, format="json").status_code == 403
        team.refresh_from_db()
        assert team.retention_days is None

    def test_an_admin_of_another_project_gets_404_not_403(self, team):
        other = ProjectFactory(slug="other")
        api = project_key_client(other, role=ProjectRole.ADMIN)
        assert api.patch("/api/v1/projects/team", {"retention_days": 1}, format="json").status_code == 404

    def test_a_person_who_is_admin_changes_settings_through_the_session(self, team):
        admin = UserFactory()
        MembershipFactory(project=team, user=admin, role=ProjectRole.ADMIN)
        response = _session(admin).patch("/api/v1/projects/team", {"name": "Renamed"}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["name"] == "Renamed"


class TestMembers:
    def test_an_admin_adds_changes_lists_and_removes_a_member(self, team):
        api = project_key_client(team, role=ProjectRole.ADMIN, username="boss")
        UserFactory(username="carol")
        added = api.post("/api/v1/projects/team/members", {"username": "carol", "role": "viewer"}, format="json")
        assert added.status_code == 201, added.content
        assert added.json()["role"] == "viewer"
        changed = api.post("/api/v1/projects/team/members", {"username": "carol", "role": "editor"}, format="json")
        assert changed.status_code == 200
        assert Membership.objects.get(project=team, user__username="carol").role == "editor"
        listed = api.get("/api/v1/projects/team/members").json()
        assert [(m["username"], m["role"]) for m in listed] == [("boss", "admin"), ("carol", "editor")]
        assert api.delete("/api/v1/projects/team/members/carol").status_code == 204
        assert not Membership.objects.filter(project=team, user__username="carol").exists()
        assert api.delete("/api/v1/projects/team/members/carol").status_code == 404

    def test_an_unknown_user_or_role_is_refused(self, team):
        api = project_key_client(team, role=ProjectRole.ADMIN)
        assert (
            api.post(
                "/api/v1/projects/team/members", {"username": "ghost", "role": "viewer"}, format="json"
            ).status_code
            == 404
        )
        UserFactory(username="carol")
        assert (
            api.post("/api/v1/projects/team/members", {"username": "carol", "role": "owner"}, format="json").status_code
            == 422
        )

    def test_a_viewer_cannot_add_members(self, team):
        api = project_key_client(team, role=ProjectRole.VIEWER)
        UserFactory(username="carol")
        response = api.post("/api/v1/projects/team/members", {"username": "carol", "role": "admin"}, format="json")
        assert response.status_code == 403
        assert not Membership.objects.filter(user__username="carol").exists()

    def test_removing_a_member_stops_their_key_at_once(self, team):
        admin_api = project_key_client(team, role=ProjectRole.ADMIN, username="boss")
        member_api = project_key_client(team, role=ProjectRole.EDITOR, username="eve")
        assert member_api.get("/api/v1/projects/team").status_code == 200
        assert admin_api.delete("/api/v1/projects/team/members/eve").status_code == 204
        assert member_api.get("/api/v1/projects/team").status_code == 403
