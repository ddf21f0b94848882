"""The role map (EVALSITE_OIDC_ROLE_MAP) and the rule that turns a user's groups into one role per
project. Pure functions without Django models: settings.py parses the map at start-up, so a typo
stops evalsite with a message naming the entry instead of silently granting nothing."""

import re
from dataclasses import dataclass

# Least to most powerful; a user in several mapped groups of one project gets the last of these they
# reach. The projects foundation's ProjectRole has the same four values (tests/oidc checks it).
ROLES = ("viewer", "reviewer", "editor", "admin")
_RANK = {role: rank for rank, role in enumerate(ROLES)}

_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


class RoleMapError(ValueError):
    """The role map cannot be read; the message names the entry and what is wrong with it."""


@dataclass(frozen=True)
class RoleGrant:
    project: str
    role: str
    group: str


def parse_role_map(text: str) -> tuple[RoleGrant, ...]:
    """`project:role=group,…` (e.g. `default:admin=evalsite-admins,default:viewer=staff`) into its
    grants, in the order written. Blank entries (a trailing comma) are ignored; anything else that is
    not `slug:role=group` with a known role is an error. Group names may hold anything but a comma
    (Keycloak's `/team/admins` paths included), and are compared exactly, case included, because
    providers treat them so."""
    grants = []
    for number, raw in enumerate(text.split(","), start=1):
        entry = raw.strip()
        if not entry:
            continue
        where = f"entry {number} ({entry!r})"
        target, equals, group = entry.partition("=")
        if not equals:
            raise RoleMapError(f"{where}: expected project:role=group")
        project, colon, role = target.strip().partition(":")
        project, role, group = project.strip(), role.strip(), group.strip()
        if not colon or not project or not role:
            raise RoleMapError(f"{where}: expected project:role before '='")
        if not _SLUG.match(project):
            raise RoleMapError(f"{where}: project {project!r} is not a slug (letters, digits, - and _)")
        if role not in _RANK:
            raise RoleMapError(f"{where}: unknown role {role!r}; roles are {', '.join(ROLES)}")
        if not group:
            raise RoleMapError(f"{where}: no group after '='")
        grants.append(RoleGrant(project=project, role=role, group=group))
    return tuple(grants)


def higher_role(a: str | None, b: str) -> str:
    return b if a is None or _RANK[b] > _RANK[a] else a


def roles_from_groups(grants: tuple[RoleGrant, ...], groups) -> dict[str, str]:
    """Each project's highest role among the grants whose group the user is in. `groups` is the
    claim as the provider sent it: a list of names, or one name as a string; anything else (a
    missing claim included) holds no group."""
    if isinstance(groups, str):
        member_of = {groups}
    elif isinstance(groups, (list, tuple)):
        member_of = {group for group in groups if isinstance(group, str)}
    else:
        member_of = set()
    roles: dict[str, str] = {}
    for grant in grants:
        if grant.group in member_of:
            roles[grant.project] = higher_role(roles.get(grant.project), grant.role)
    return roles
