"""Project roles from the groups claim (services.sync_sso_memberships): the highest mapped role per
project, synced at every login; SSO-granted memberships follow the claim, memberships added (or
changed) by hand are left alone."""

import pytest

from apps.core.auth.oidc.config import parse_role_map
from apps.core.auth.oidc.services import has_project_access, sso_user_for_claims
from apps.core.models import Membership, SsoMembershipGrant
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory

ISSUER = "https://id.example.com/realms/acme"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def role_map(settings):
    settings.EVALSITE_OIDC_ROLE_MAP = parse_role_map(
        "default:viewer=staff,default:admin=evalsite-admins,team-b:editor=b-editors,ghost:admin=evalsite-admins"
    )
    ProjectFactory(slug="default", name="Default")
    ProjectFactory(slug="team-b", name="Team B")


def login(groups, sub="s-1"):
    return sso_user_for_claims(issuer=ISSUER, claims={"sub": sub, "preferred_username": f"u{sub}", "groups": groups})


def roles(user) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user).values_list("project__slug", "role"))


def test_the_highest_mapped_role_per_project(caplog):
    user = login(["staff", "evalsite-admins", "b-editors", "unmapped"])
    assert roles(user) == {"default": "admin", "team-b": "editor"}
    assert SsoMembershipGrant.objects.filter(membership__user=user).count() == 2
    # The map names a project that does not exist: skipped, and the operator is told.
    assert "EVALSITE_OIDC_ROLE_MAP names project 'ghost', which does not exist" in caplog.text


def test_roles_follow_the_claim_at_each_login():
    user = login(["evalsite-admins", "b-editors"])
    login(["staff"])
    # Demoted in default, and out of team-b: its membership was SSO's to remove.
    assert roles(user) == {"default": "viewer"}
    login(["staff", "b-editors"])
    assert roles(user) == {"default": "viewer", "team-b": "editor"}


def test_a_membership_added_by_hand_is_kept_and_wins():
    user = login(["staff"])
    other = ProjectFactory(slug="team-c")
    MembershipFactory(user=user, project=other, role="reviewer")
    Membership.objects.filter(user=user, project__slug="default").delete()
    MembershipFactory(user=user, project=ProjectFactory(slug="default"), role="editor")
    login(["evalsite-admins"])
    # default: made by hand as editor, so the map's admin does not replace it; team-c: not in the map.
    assert roles(user) == {"default": "editor", "team-c": "reviewer"}
    login([])
    assert roles(user) == {"default": "editor", "team-c": "reviewer"}


def test_a_role_changed_by_hand_becomes_a_hand_grant():
    user = login(["evalsite-admins"])
    Membership.objects.filter(user=user, project__slug="default").update(role="reviewer")
    login(["staff"])
    assert roles(user) == {"default": "reviewer"}
    assert not SsoMembershipGrant.objects.filter(membership__user=user).exists()
    login([])
    assert roles(user) == {"default": "reviewer"}


def test_no_mapped_group_no_project_no_login():
    user = login(["unmapped"])
    assert roles(user) == {} and not has_project_access(user)
    # Placed by hand afterwards (the user exists, so an admin can name them): the next login goes through.
    MembershipFactory(user=user, project=ProjectFactory(slug="team-b"), role="viewer")
    assert has_project_access(login(["unmapped"]))


def test_a_superuser_needs_no_project():
    assert has_project_access(UserFactory(is_superuser=True))
