"""The project a request acts in, decided in one place.

- An API key acts in its own project, always (`ApiKey.project`): nothing in a request can move it.
- A signed-in person acts in the project chosen in their session (`session_project_select`, the
  console's switcher), if they may still see it; otherwise in their first project by name, or in
  `default` if they belong to none (see `access` for what they may do there). Superusers may choose
  any project.
- An anonymous client (EVALSITE_ALLOW_ANONYMOUS) acts in `default`.

Views call `project_of(request)` with a DRF or a plain Django request, and `scopes_of(request)`
(apps.core.auth.permissions) for what the request may do there. Both are computed once per request
and credentials: a person's projects and roles are one query.
"""

from dataclasses import dataclass

from django.db.models import OuterRef, Q, Subquery

from apps.core.errors import NotFoundError
from apps.core.models import DEFAULT_PROJECT_SLUG, SCOPE_ADMIN, ApiKey, Membership, Project, ProjectRole
from apps.core.projects.access import key_scopes, role_in, scope_cap

SESSION_KEY = "evalsite_project"


@dataclass(frozen=True)
class RequestAccess:
    project: Project
    scopes: frozenset[str]
    role: ProjectRole | None


def _django_request(request):
    # A DRF Request wraps the Django one; DRF copies the user and auth it authenticates onto it.
    return getattr(request, "_request", request)


def _session_access(raw, user) -> RequestAccess:
    session = getattr(raw, "session", None)
    chosen = session.get(SESSION_KEY) if session is not None else None
    # The user's projects with their role, and `default`, in one query.
    role_here = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    candidates = Project.objects.filter(Q(slug=DEFAULT_PROJECT_SLUG) | Q(memberships__user=user))
    if user.is_superuser and chosen:
        candidates = Project.objects.filter(Q(slug=DEFAULT_PROJECT_SLUG) | Q(slug=chosen) | Q(memberships__user=user))
    projects = list(candidates.annotate(member_role=Subquery(role_here)).distinct().order_by("name", "slug"))
    visible = [p for p in projects if p.member_role or user.is_superuser]
    unplaced = not any(p.member_role for p in projects)
    project = next((p for p in visible if p.slug == chosen), None)
    if project is None and not user.is_superuser:
        project = visible[0] if visible else None
    if project is None:
        # `default` is in `projects` unless the database was emptied since migrating (a flush):
        # Project.objects.default() makes it again rather than failing every page.
        project = next((p for p in projects if p.slug == DEFAULT_PROJECT_SLUG), None) or Project.objects.default()
    member_role = getattr(project, "member_role", None)
    role = ProjectRole.ADMIN if user.is_superuser else (ProjectRole(member_role) if member_role else None)
    scopes = scope_cap(user, role=role, unplaced=unplaced and project.slug == DEFAULT_PROJECT_SLUG, session=True)
    return RequestAccess(project=project, scopes=scopes, role=role)


def request_access(request) -> RequestAccess:
    """The project `request` acts in, what it may do there, and the person's role (None for a key,
    an anonymous client, or a person in no project)."""
    # Reading request.auth on a DRF request authenticates it first, so a key is never missed.
    auth = getattr(request, "auth", None)
    user = getattr(request, "user", None)
    raw = _django_request(request)
    identity = (id(auth), getattr(user, "pk", None))
    cached = getattr(raw, "_evalsite_access", None)
    if cached is not None and cached[0] == identity:
        return cached[1]
    if isinstance(auth, ApiKey):
        access = RequestAccess(project=auth.project, scopes=key_scopes(auth), role=None)
    elif user is not None and user.is_authenticated and user.is_active:
        access = _session_access(raw, user)
    else:
        # Anonymous scopes are the permission module's to decide (EVALSITE_ALLOW_ANONYMOUS).
        access = RequestAccess(project=Project.objects.default(), scopes=frozenset(), role=None)
    raw._evalsite_access = (identity, access)
    return access


def project_of(request) -> Project:
    """The project `request` acts in (see the module's docstring)."""
    return request_access(request).project


def session_project_select(request, *, slug: str) -> Project:
    """Make `slug` the project of `request`'s session from now on (the console's switcher).
    NotFoundError for a project the user may not see, worded as for one that does not exist."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise NotFoundError(f"No project {slug}")
    project = Project.objects.visible_to(user).filter(slug=slug).first()
    if project is None:
        raise NotFoundError(f"No project {slug}")
    raw = _django_request(request)
    raw.session[SESSION_KEY] = project.slug
    raw.__dict__.pop("_evalsite_access", None)
    return project


def projects_visible(request):
    """The projects `request` may see: a key only its own; a person their projects (a superuser
    every one, a person in no project `default`); an anonymous client none."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiKey):
        return Project.objects.filter(pk=auth.project_id)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return Project.objects.none()
    if not user.is_superuser and not Membership.objects.filter(user=user).exists():
        return Project.objects.filter(slug=DEFAULT_PROJECT_SLUG)
    return Project.objects.visible_to(user)


def is_project_admin(request, project: Project) -> bool:
    """Whether `request` may manage `project` (its settings and members): a key of that project
    holding `admin` (which only an admin's key can), or a person who is its admin or a superuser."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiKey):
        return auth.project_id == project.pk and SCOPE_ADMIN in key_scopes(auth)
    user = getattr(request, "user", None)
    return role_in(user, project) == ProjectRole.ADMIN


def is_superuser(request) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)
