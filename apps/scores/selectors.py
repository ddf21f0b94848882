"""Reads of scores that every judging app shares."""

from collections.abc import Iterable
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from .models import Score, ScoreQuerySet


def human_in_force(subject_kind: str, subject_ids: Iterable[int] | QuerySet[Any, Any] | None = None) -> ScoreQuerySet:
    """The human score in force per (subject, kind, key): the newest one. A queryset, so callers
    can filter, aggregate or join it further in the database."""
    humans = Score.objects.of(subject_kind, subject_ids).human()
    newest = (
        Score.objects.human()
        .filter(
            subject_kind=OuterRef("subject_kind"),
            subject_id=OuterRef("subject_id"),
            kind=OuterRef("kind"),
            key=OuterRef("key"),
        )
        .order_by("-created_at", "-id")
        .values("id")[:1]
    )
    return humans.filter(id=Subquery(newest))
