"""A user's role in a project, and what it lets their keys and their session do there.

Superusers are admins of every project. A user who belongs to no project at all is a user from
before projects existed (or one nobody has placed yet): in `default` only, they keep what the
staff flag gave them then (keys: every scope but admin, all for staff; session: read, all for
staff), so an upgrade locks nobody out; everywhere else they have nothing.

Role → scopes (a key's stored scopes are capped by its owner's role in the key's project; a
session gets its role's scopes): viewer reads; reviewer reads and reviews (human reviews, review
queues); editor also ingests, evaluates and configures; admin holds every scope.
"""

from apps.core.models import (
    ALL_SCOPES,
    DEFAULT_PROJECT_SLUG,
    ROLE_SCOPES,
    SCOPE_READ,
    ApiKey,
    Membership,
    Project,
    ProjectRole,
    scopes_allowed_for,
)

NO_SCOPES: frozenset[str] = frozenset()


def role_in(user, project: Project) -> ProjectRole | None:
    """`user`'s role in `project`: admin for a superuser, their membership's role, or None."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return ProjectRole.ADMIN
    role = Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()
    return ProjectRole(role) if role else None


def _unplaced(user, project: Project) -> bool:
    return project.slug == DEFAULT_PROJECT_SLUG and not Membership.objects.filter(user=user).exists()


def scope_cap(user, *, role: ProjectRole | None, unplaced: bool, session: bool) -> frozenset[str]:
    """What `user` may do with `role` in a project (`unplaced`: they are in no project and this is
    `default`), through a session or through their keys."""
    if user is None or not user.is_active:
        return NO_SCOPES
    if role is not None:
        return ROLE_SCOPES[role]
    if not unplaced:
        return NO_SCOPES
    if session:
        return frozenset(ALL_SCOPES) if user.is_staff else frozenset({SCOPE_READ})
    return scopes_allowed_for(user)


def key_scope_cap(user, project: Project) -> frozenset[str]:
    """The most a key of `user` in `project` may hold."""
    role = role_in(user, project)
    unplaced = role is None and _unplaced(user, project)
    return scope_cap(user, role=role, unplaced=unplaced, session=False)


def key_scopes(api_key: ApiKey) -> frozenset[str]:
    """A key's scopes as they are now: those stored on it, capped by its owner's role in its project.
    The authenticator sets `owner_scope_cap` on the rows it caches, so a request costs no query."""
    cap = getattr(api_key, "owner_scope_cap", None)
    if cap is None:
        cap = key_scope_cap(api_key.user, api_key.project)
    return frozenset(api_key.scopes or ()) & cap
