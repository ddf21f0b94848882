"""The console pages' layout context: core's, with what the console adds to every page: the actions
the person's role in the session's project allows (apps.console.access) and the project switcher
(the session's project, and the projects the person may switch to: theirs only, never another's
name)."""

from apps.core.http.pages import layout_context
from apps.core.models import Project
from apps.core.projects.resolution import request_access

from .access import CONFIGURE, EDIT, REVIEW, may


def switcher_projects(request) -> list[Project]:
    """The projects the signed-in person may act in: their memberships (every project for a
    superuser), by name. A person in no project has only `default`, which the page then names."""
    user = request.user
    if not user.is_authenticated:
        return []
    return list(Project.objects.visible_to(user).order_by("name", "slug").only("name", "slug"))


def console_context(request, *, title: str, **extra) -> dict:
    context = layout_context(request, title=title)
    if request.user.is_authenticated:
        context.update(
            can_evaluate=may(request, EDIT),
            can_configure=may(request, CONFIGURE),
            can_review=may(request, REVIEW),
            current_project=request_access(request).project,
            switcher_projects=switcher_projects(request),
        )
    context.update(extra)
    return context


__all__ = ["console_context"]
