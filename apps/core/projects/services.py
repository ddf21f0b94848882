"""Writes of projects and memberships. Who may call them is the caller's to check (the API: a
superuser creates projects, a project's admins change its settings and members)."""

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from apps.core.errors import ConflictError, NotFoundError
from apps.core.models import Membership, Project, ProjectRole

from .schemas import ProjectChanges, ProjectNew


def project_create(*, data: ProjectNew) -> Project:
    try:
        with transaction.atomic():
            return Project.objects.create(name=data.name, slug=data.slug)
    except IntegrityError:
        raise ConflictError(f"A project with slug {data.slug} already exists") from None


def project_update(*, project: Project, changes: ProjectChanges) -> Project:
    """Apply the fields `changes` was given (name, retention_days, run_retention_days, redaction)."""
    sent = changes.model_fields_set
    for field in ("name", "retention_days", "run_retention_days"):
        if field in sent:
            setattr(project, field, getattr(changes, field))
    if "redaction" in sent and changes.redaction is not None:
        project.redaction = changes.redaction.model_dump(exclude_none=True)
    if sent:
        project.save(
            update_fields=[f for f in ("name", "retention_days", "run_retention_days", "redaction") if f in sent]
        )
    return project


def _user_named(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFoundError(f"No user {username}")
    return user


def membership_set(*, project: Project, username: str, role: ProjectRole | str) -> tuple[Membership, bool]:
    """Give `username` `role` in `project` (adding them, or changing their role). Returns the
    membership and whether it is new."""
    user = _user_named(username)
    membership, created = Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = ProjectRole(role)
        membership.save(update_fields=["role"])
    return membership, created


def membership_remove(*, project: Project, username: str) -> None:
    membership = Membership.objects.filter(project=project, user__username=username).first()
    if membership is None:
        raise NotFoundError(f"{username} is not a member of project {project.slug}")
    membership.delete()
