"""Projects: the default project, roles, which project a request acts in, and keys' project caps."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from apps.core.auth.authentication import ApiKeyAuthentication, api_key_cache
from apps.core.auth.permissions import scopes_of
from apps.core.errors import InvalidInputError, NotFoundError
from apps.core.models import ApiKey, Membership, Project, ProjectRole, hash_api_key
from apps.core.projects.resolution import project_of, session_project_select
from tests.core.factories import ApiKeyFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def _key_request(raw_key: str) -> Request:
    raw = APIRequestFactory().get("/api/v1/traces", HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return Request(raw, authenticators=[ApiKeyAuthentication(), SessionAuthentication()])


def _session_request(user, chosen: str | None = None):
    raw = RequestFactory().get("/console/")
    SessionMiddleware(lambda r: None).process_request(raw)
    if chosen is not None:
        raw.session["evalsite_project"] = chosen
    raw.user = user
    return raw


class TestDefaultProject:
    def test_the_migration_made_default(self):
        project = Project.objects.default()
        assert (project.slug, project.name) == ("default", "Default")
        assert project.redaction == {"enabled": False, "detectors": [], "custom_patterns": []}
        assert project.retention_days is None and project.run_retention_days is None

    def test_a_key_made_without_a_project_is_in_default(self):
        assert ApiKeyFactory().project.slug == "default"


class TestRoles:
    def test_roles_are_ordered_viewer_reviewer_editor_admin(self):
        assert ProjectRole.ADMIN.at_least(ProjectRole.EDITOR)
        assert ProjectRole.EDITOR.at_least("reviewer")
        assert ProjectRole.REVIEWER.at_least(ProjectRole.REVIEWER)
        assert not ProjectRole.VIEWER.at_least(ProjectRole.REVIEWER)
        assert not ProjectRole.EDITOR.at_least("admin")

    def test_one_membership_per_project_and_user(self):
        membership = MembershipFactory()
        with pytest.raises(IntegrityError), transaction.atomic():
            Membership.objects.create(project=membership.project, user=membership.user, role="admin")


class TestCreateApiKeyCommand:
    def test_project_option_puts_the_key_in_that_project(self, capsys):
        team = ProjectFactory(slug="team")
        MembershipFactory(project=team, user=UserFactory(username="alice"), role=ProjectRole.EDITOR)
        call_command("create_api_key", "--user", "alice", "--project", "team")
        raw_key = capsys.readouterr().out.strip()
        key = ApiKey.objects.get(key_hash=hash_api_key(raw_key))
        assert key.project == team
        assert key.scopes == ["read", "ingest", "evaluate"]

    def test_without_the_option_the_key_is_in_default(self, capsys):
        call_command("create_api_key", "--user", "bob")
        key = ApiKey.objects.get(key_hash=hash_api_key(capsys.readouterr().out.strip()))
        assert key.project.slug == "default"

    def test_an_unknown_project_is_refused_and_names_the_known_ones(self):
        with pytest.raises(CommandError, match="No project 'nope'. Projects: default"):
            call_command("create_api_key", "--user", "carol", "--project", "nope")
        assert not ApiKey.objects.exists()

    def test_a_key_in_a_project_its_user_is_not_a_member_of_is_refused(self):
        ProjectFactory(slug="elsewhere")
        with pytest.raises(CommandError, match="not a member of project elsewhere"):
            call_command("create_api_key", "--user", "dave", "--project", "elsewhere")
        assert not ApiKey.objects.exists()

    def test_scopes_beyond_the_role_are_refused(self):
        team = ProjectFactory(slug="team")
        MembershipFactory(project=team, user=UserFactory(username="vic"), role=ProjectRole.VIEWER)
        with pytest.raises(CommandError, match="vic is viewer in project team"):
            call_command("create_api_key", "--user", "vic", "--project", "team", "--scopes", "read,ingest")


class TestRequestProject:
    def test_a_key_acts_in_its_project(self):
        team = ProjectFactory()
        user = UserFactory(password=None)
        MembershipFactory(project=team, user=user, role=ProjectRole.EDITOR)
        key = ApiKeyFactory(user=user, project=team)
        assert project_of(_key_request(key.raw_key)) == team

    def test_a_key_ignores_the_session_choice(self):
        # A browser that holds a session and sends a key acts as the key: the key's project.
        team, other = ProjectFactory(), ProjectFactory()
        user = UserFactory(password=None)
        MembershipFactory(project=team, user=user, role=ProjectRole.EDITOR)
        MembershipFactory(project=other, user=user, role=ProjectRole.EDITOR)
        key = ApiKeyFactory(user=user, project=team)
        request = _key_request(key.raw_key)
        SessionMiddleware(lambda r: None).process_request(request._request)
        request._request.session["evalsite_project"] = other.slug
        assert project_of(request) == team

    def test_a_cached_key_resolves_its_project_without_a_query(self, settings):
        settings.EVALSITE_API_KEY_CACHE_SECONDS = 60
        api_key_cache.clear()
        key = ApiKeyFactory()
        project_of(_key_request(key.raw_key))
        with CaptureQueriesContext(connection) as queries:
            request = _key_request(key.raw_key)
            assert project_of(request).slug == "default"
            assert "read" in scopes_of(request)
        assert not any("core_project" in q["sql"] or "core_membership" in q["sql"] for q in queries)
        api_key_cache.clear()

    def test_a_member_acts_in_the_project_chosen_in_the_session(self):
        first, second = ProjectFactory(name="A"), ProjectFactory(name="B")
        user = UserFactory()
        MembershipFactory(project=first, user=user)
        MembershipFactory(project=second, user=user)
        assert project_of(_session_request(user, chosen=second.slug)) == second

    def test_without_a_choice_a_member_acts_in_their_first_project_by_name(self):
        later, first = ProjectFactory(name="Zeta"), ProjectFactory(name="Alpha")
        user = UserFactory()
        MembershipFactory(project=later, user=user)
        MembershipFactory(project=first, user=user)
        assert project_of(_session_request(user)) == first

    def test_a_choice_of_a_project_the_user_left_falls_back(self):
        # The session outlives the membership: the choice must be checked on every request.
        kept, left = ProjectFactory(name="Kept"), ProjectFactory(name="Left")
        user = UserFactory()
        MembershipFactory(project=kept, user=user)
        assert project_of(_session_request(user, chosen=left.slug)) == kept

    def test_a_superuser_may_act_in_any_project(self):
        team = ProjectFactory()
        root = UserFactory(is_superuser=True, is_staff=True)
        assert project_of(_session_request(root, chosen=team.slug)) == team
        assert project_of(_session_request(root)).slug == "default"

    def test_a_user_in_no_project_acts_in_default_with_what_staff_gave_them(self):
        user = UserFactory()
        request = _session_request(user)
        assert project_of(request).slug == "default"
        assert scopes_of(request) == {"read"}
        staff = _session_request(UserFactory(is_staff=True))
        assert "admin" in scopes_of(staff)

    def test_a_member_elsewhere_has_nothing_in_default(self):
        # Once placed in a project, a person no longer falls back to the pre-projects default.
        user = UserFactory(is_staff=True)
        MembershipFactory(user=user, role=ProjectRole.VIEWER)
        assert project_of(_session_request(user, chosen="default")).slug != "default"

    def test_session_scopes_follow_the_role(self):
        team = ProjectFactory()
        for role, expected in [
            (ProjectRole.VIEWER, {"read"}),
            (ProjectRole.REVIEWER, {"read", "review"}),
            (ProjectRole.EDITOR, {"read", "ingest", "evaluate", "review", "configure"}),
            (ProjectRole.ADMIN, {"read", "ingest", "evaluate", "review", "configure", "admin"}),
        ]:
            user = UserFactory()
            MembershipFactory(project=team, user=user, role=role)
            assert scopes_of(_session_request(user, chosen=team.slug)) == expected, role

    def test_anonymous_acts_in_default(self):
        assert project_of(_session_request(AnonymousUser())).slug == "default"

    def test_selecting_a_project_stores_it_in_the_session(self):
        first, second = ProjectFactory(name="A"), ProjectFactory(name="B")
        user = UserFactory()
        MembershipFactory(project=first, user=user)
        MembershipFactory(project=second, user=user)
        request = _session_request(user)
        assert project_of(request) == first
        assert session_project_select(request, slug=second.slug) == second
        assert project_of(request) == second
        assert request.session["evalsite_project"] == second.slug

    def test_selecting_a_project_one_is_not_in_is_not_found(self):
        hidden = ProjectFactory()
        user = UserFactory()
        MembershipFactory(user=user)
        with pytest.raises(NotFoundError, match=f"No project {hidden.slug}"):
            session_project_select(_session_request(user), slug=hidden.slug)


class TestKeyScopesCappedByRole:
    def _member_key(self, role, scopes):
        team = ProjectFactory()
        user = UserFactory(password=None)
        membership = MembershipFactory(project=team, user=user, role=role)
        return membership, ApiKeyFactory(user=user, project=team, scopes=scopes)

    def test_a_project_admin_key_holds_admin_without_staff(self):
        _membership, key = self._member_key(ProjectRole.ADMIN, ["read", "admin"])
        assert scopes_of(_key_request(key.raw_key)) == {"read", "admin"}

    def test_lowering_the_owner_role_takes_scopes_from_the_key_at_once(self, settings):
        settings.EVALSITE_API_KEY_CACHE_SECONDS = 60
        api_key_cache.clear()
        membership, key = self._member_key(ProjectRole.EDITOR, ["read", "ingest", "configure"])
        assert scopes_of(_key_request(key.raw_key)) == {"read", "ingest", "configure"}
        membership.role = ProjectRole.VIEWER
        membership.save()
        assert scopes_of(_key_request(key.raw_key)) == {"read"}
        membership.delete()
        assert scopes_of(_key_request(key.raw_key)) == frozenset()
        api_key_cache.clear()

    def test_a_viewer_key_cannot_be_made_with_ingest(self):
        with pytest.raises(InvalidInputError, match="is viewer in project"):
            self._member_key(ProjectRole.VIEWER, ["read", "ingest"])
