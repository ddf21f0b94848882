"""Reads of projects and memberships."""

from django.db.models import F, QuerySet

from apps.core.errors import NotFoundError
from apps.core.models import Membership, Project


def project_get(*, projects: QuerySet[Project], slug: str) -> Project:
    """The project `slug` among `projects` (those the caller may see); NotFoundError otherwise,
    worded the same whether it exists elsewhere or not."""
    project = projects.filter(slug=slug).first()
    if project is None:
        raise NotFoundError(f"No project {slug}")
    return project


def members_of(*, project: Project) -> QuerySet[Membership]:
    """The project's memberships with the member's `username`, by username."""
    return project.memberships.annotate(username=F("user__username")).order_by("username")


def member_get(*, project: Project, username: str) -> Membership:
    membership = members_of(project=project).filter(user__username=username).first()
    if membership is None:
        raise NotFoundError(f"{username} is not a member of project {project.slug}")
    return membership
