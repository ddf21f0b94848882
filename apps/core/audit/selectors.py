"""Reading the audit trail: one project's events, newest first, filtered and paged."""

from dataclasses import dataclass

from django.db.models import QuerySet

from apps.core.models import AuditEvent, Project

from .filters import AuditEventFilter

FILTERS = ("action", "object_type", "object_id", "actor", "since", "until")


@dataclass(frozen=True)
class AuditPage:
    events: list[AuditEvent]
    has_more: bool


def audit_events_filtered(*, project: Project, filters: dict | None = None) -> QuerySet[AuditEvent]:
    """`project`'s events that AuditEventFilter chooses with `filters` (an absent one is not applied),
    newest first (served by the auditevent_project_newest index)."""
    events = AuditEvent.objects.filter(project=project)
    return AuditEventFilter(filters or {}, events).qs.newest_first()


def audit_events(*, project: Project, limit: int, offset: int, filters: dict | None = None) -> AuditPage:
    """One page of `project`'s events; one extra row says whether more follow."""
    rows = list(audit_events_filtered(project=project, filters=filters)[offset : offset + limit + 1])
    return AuditPage(events=rows[:limit], has_more=len(rows) > limit)


def audit_actions(*, project: Project) -> list[str]:
    """The actions and object types recorded in `project` (the console's filter choices)."""
    return _distinct(project, "action")


def audit_object_types(*, project: Project) -> list[str]:
    return _distinct(project, "object_type")


def _distinct(project: Project, name: str) -> list[str]:
    return list(AuditEvent.objects.filter(project=project).order_by(name).values_list(name, flat=True).distinct())
