"""The role map (EVALSITE_OIDC_ROLE_MAP) as a pure function, and evalsite refusing to start on a
configuration that cannot work."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

from apps.core.auth.oidc.config import ROLES, RoleGrant, RoleMapError, parse_role_map, roles_from_groups


class TestParseRoleMap:
    def test_the_documented_example(self):
        assert parse_role_map("default:admin=evalsite-admins,default:viewer=staff") == (
            RoleGrant(project="default", role="admin", group="evalsite-admins"),
            RoleGrant(project="default", role="viewer", group="staff"),
        )

    def test_spaces_blank_entries_and_group_paths(self):
        grants = parse_role_map(" team-a : editor = /acme/Team A Editors , ,")
        assert grants == (RoleGrant(project="team-a", role="editor", group="/acme/Team A Editors"),)

    def test_unset_is_no_grants(self):
        assert parse_role_map("") == ()

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("default:admin", "entry 1 ('default:admin'): expected project:role=group"),
            ("default=staff", "expected project:role before '='"),
            ("default:owner=staff", "unknown role 'owner'; roles are viewer, reviewer, editor, admin"),
            ("default:viewer=", "no group after '='"),
            ("a b:viewer=staff", "project 'a b' is not a slug"),
            ("default:viewer=staff,default:admin", "entry 2 ('default:admin')"),
        ],
    )
    def test_mistakes_name_the_entry(self, text, message):
        with pytest.raises(RoleMapError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_role_map(text)


class TestRolesFromGroups:
    GRANTS = parse_role_map("default:viewer=staff,default:admin=admins,default:reviewer=reviewers,other:editor=staff")

    def test_the_highest_role_per_project(self):
        # In both staff (viewer) and admins (admin) for default: admin, whatever the order written.
        assert roles_from_groups(self.GRANTS, ["staff", "admins"]) == {"default": "admin", "other": "editor"}

    def test_one_group_as_a_string(self):
        assert roles_from_groups(self.GRANTS, "reviewers") == {"default": "reviewer"}

    @pytest.mark.parametrize("groups", [None, [], ["Staff"], {"staff": True}, 7, [["staff"]]])
    def test_no_mapped_group_is_no_role(self, groups):
        # Names compare exactly (case included), and a claim of another shape holds no group.
        assert roles_from_groups(self.GRANTS, groups) == {}

    def test_roles_are_the_projects_roles(self):
        assert ROLES == ("viewer", "reviewer", "editor", "admin")


def start_settings(env: dict, tmp_path) -> subprocess.CompletedProcess:
    """Import the settings in a fresh process: they read the environment once, at import."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSITE_OIDC", "EVALSITE_PASSWORD", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "-c", "import evalsite.settings"],
        cwd=settings.BASE_DIR,
        env={**base, "EVALSITE_VAR_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


SSO_ENV = {
    "EVALSITE_OIDC_ISSUER": "https://id.example.com/realms/acme",
    "EVALSITE_OIDC_CLIENT_ID": "evalsite",
    "EVALSITE_OIDC_CLIENT_SECRET": "s3cret-value-not-to-print",
}


@pytest.mark.subprocess
class TestStartUp:
    def test_a_complete_configuration_starts(self, tmp_path):
        result = start_settings(
            {**SSO_ENV, "EVALSITE_OIDC_ROLE_MAP": "default:admin=a", "EVALSITE_PASSWORD_LOGIN": "0"}, tmp_path
        )
        assert result.returncode == 0, result.stderr

    def test_a_bad_role_map_stops_evalsite_naming_the_entry(self, tmp_path):
        result = start_settings({**SSO_ENV, "EVALSITE_OIDC_ROLE_MAP": "default:admin=a,default:boss=b"}, tmp_path)
        assert result.returncode != 0
        assert "EVALSITE_OIDC_ROLE_MAP: entry 2 ('default:boss=b'): unknown role 'boss'" in result.stderr
        assert SSO_ENV["EVALSITE_OIDC_CLIENT_SECRET"] not in result.stderr

    def test_an_issuer_without_client_credentials(self, tmp_path):
        result = start_settings({"EVALSITE_OIDC_ISSUER": SSO_ENV["EVALSITE_OIDC_ISSUER"]}, tmp_path)
        assert "EVALSITE_OIDC_CLIENT_ID and EVALSITE_OIDC_CLIENT_SECRET must be set too" in result.stderr

    def test_password_login_off_without_sso_would_lock_everyone_out(self, tmp_path):
        result = start_settings({"EVALSITE_PASSWORD_LOGIN": "0"}, tmp_path)
        assert "EVALSITE_PASSWORD_LOGIN=0 needs EVALSITE_OIDC_ISSUER" in result.stderr
