"""Writes of scores. Each app that judges something builds its rows and stores them here; nothing
else writes the table."""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import QuerySet

from .models import Score
from .signals import subjects_deleted
from .vocabulary import JudgeStatus, ScoreKind, ScoreSource

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def scores_store(*, rows: Iterable[Score], batch_size: int = 2000) -> list[Score]:
    """Stores judge verdicts built as unsaved Score instances, in the order given (`position` is
    the caller's). One INSERT per batch: a run or a backfill writes many at once."""
    rows = list(rows)
    if not rows:
        return rows
    return Score.objects.bulk_create(rows, batch_size=batch_size)


def scores_delete(*, subject_kind: str, subject_ids: Iterable[int] | QuerySet[Any, Any]) -> int:
    """Deletes every score (judge and human) of the given subjects: what their app calls when it
    deletes them, since there is no cascade from a subject kind + id."""
    deleted, _ = Score.objects.of(subject_kind, subject_ids).delete()
    return deleted


def subjects_forget(*, subject_kind: str, subject_ids: list[int] | QuerySet[Any, Any]) -> int:
    """Before subjects are deleted in bulk (retention): their scores go, and whatever else names
    them by kind + id hears of it (signals.subjects_deleted), in one query each rather than one per
    subject. Call inside the transaction that deletes the subjects. Returns the scores deleted."""
    deleted = scores_delete(subject_kind=subject_kind, subject_ids=subject_ids)
    subjects_deleted.send(sender=Score, subject_kind=subject_kind, subject_ids=subject_ids)
    return deleted


@transaction.atomic
def human_score_record(
    *,
    subject_kind: str,
    subject_id: int,
    kind: str,
    key: str,
    passed: bool | None = None,
    value: float | None = None,
    note: str = "",
    author: "User | None" = None,
    parent_id: int | None = None,
    attempt: int | None = None,
    detail: dict | None = None,
) -> Score:
    """A person's verdict on one key of one subject. Appended, never updated: the newest human
    score of a (subject, kind, key) is the one in force, and the older ones are its history."""
    if passed is None and value is None:
        raise ValueError("A human score gives passed, value or both.")
    return Score.objects.create(
        subject_kind=subject_kind,
        subject_id=subject_id,
        parent_id=parent_id,
        kind=kind or ScoreKind.METRIC,
        key=key,
        source=ScoreSource.HUMAN,
        status=JudgeStatus.OK,
        passed=passed,
        value=value,
        reasoning=note,
        author=author,
        attempt=attempt,
        detail=detail,
    )
