"""Retention: what a project keeps, and the pass that deletes what expired.

A project keeps traces, spans and agentic/RAG evaluations for `retention_days`, runs for
`run_retention_days` (null keeps forever). Each app that stores such rows registers an Expirer in
its AppConfig.ready (this module is in the bottom layer and imports none of them): `pending` counts
what would go, `expire` deletes up to `limit` of the oldest in one short transaction and returns how
many went. The pass (`retention_apply`, run by Celery beat and `manage.py apply_retention`) calls
each expirer batch after batch, pausing between batches, so ingestion never waits on a long lock
and a crash loses at most one batch's work, which the next pass redoes.

Before the batches, each registered Reclaimer frees what it can in bulk, across projects: on
PostgreSQL the tool calls' partitions whose every trace has expired are dropped whole, which returns
their disk space (apps.traces.partitions); the batches then delete what is left row by row. After
the batches, the reclaimers of rows the batches must read first (an evaluation's Score rows) drop
the partitions the batches emptied, which returns the space the deleted rows held.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.audit.services import audit_record
from apps.core.models import Project

RETENTION_DAYS = "retention_days"
RUN_RETENTION_DAYS = "run_retention_days"


@dataclass(frozen=True)
class Expirer:
    """What one app expires. `name` is what the pass reports (and the audit trail's object type)."""

    name: str
    # The Project field that holds the number of days: RETENTION_DAYS or RUN_RETENTION_DAYS.
    setting: str
    # Runs in this order, lowest first: evaluations before the traces they point at.
    order: int
    pending: Callable[[Project, datetime], int]
    # Deletes at most `limit` of the project's expired rows, oldest first, in one transaction;
    # returns how many went (0 when none is left).
    expire: Callable[[Project, datetime, int], int]


@dataclass(frozen=True)
class Reclaimer:
    """Frees, in bulk and across projects, rows that every project's retention has expired, before
    the batches delete them one by one, or after (a partition dropped whole). `name` is what the pass
    reports; both callables take the pass's `now` and count the units they free (partitions)."""

    name: str
    reclaimable: Callable[[datetime], int]
    reclaim: Callable[[datetime], int]
    # After the batches instead of before: for rows the batches read as they delete (an agentic
    # evaluation's Score rows are taken out of the running totals with it), so the bulk step only
    # returns the space of what the batches emptied.
    after_batches: bool = False


_EXPIRERS: dict[str, Expirer] = {}
_RECLAIMERS: dict[str, Reclaimer] = {}


def expirer_register(expirer: Expirer) -> None:
    _EXPIRERS[expirer.name] = expirer


def reclaimer_register(reclaimer: Reclaimer) -> None:
    _RECLAIMERS[reclaimer.name] = reclaimer


def expirers() -> list[Expirer]:
    return sorted(_EXPIRERS.values(), key=lambda e: (e.order, e.name))


def cutoff_of(project: Project, setting: str, now: datetime) -> datetime | None:
    """Rows created before this are expired; None when the project keeps them forever."""
    days = getattr(project, setting)
    return None if days is None else now - timedelta(days=days)


def _projects(slug: str | None):
    projects = Project.objects.filter(Q(retention_days__isnull=False) | Q(run_retention_days__isnull=False))
    return projects.filter(slug=slug) if slug else projects


@dataclass
class Expiry:
    # "" for a Reclaimer's bulk step, which is every project's.
    project: str
    kind: str
    before: datetime
    count: int


def _reclaimed(
    now: datetime, step: Callable[[Reclaimer], Callable[[datetime], int]], *, after_batches: bool | None = None
) -> list[Expiry]:
    """What each reclaimer (of one phase, if `after_batches` is given) frees, or would, where it
    frees anything: on SQLite, nothing."""
    chosen = [r for r in _RECLAIMERS.values() if after_batches is None or r.after_batches == after_batches]
    counts = [(r.name, step(r)(now)) for r in chosen]
    return [Expiry("", name, now, n) for name, n in counts if n]


def retention_plan(*, project: str | None = None, now: datetime | None = None) -> list[Expiry]:
    """What a pass would delete now, per project and kind (`apply_retention --dry-run`)."""
    now = now or timezone.now()
    plan = _reclaimed(now, lambda r: r.reclaimable) if project is None else []
    for p in _projects(project):
        for expirer in expirers():
            before = cutoff_of(p, expirer.setting, now)
            if before is not None:
                plan.append(Expiry(p.slug, expirer.name, before, expirer.pending(p, before)))
    return plan


def retention_apply(
    *,
    project: str | None = None,
    now: datetime | None = None,
    batch_size: int | None = None,
    pause_seconds: float | None = None,
) -> list[Expiry]:
    """Deletes what expired, in batches of `batch_size` (EVALSITE_RETENTION_BATCH_SIZE) with
    `pause_seconds` (EVALSITE_RETENTION_PAUSE_MS) between them; each (project, kind) that lost rows
    is one event of the audit trail (action "expire"), which retention itself never deletes.
    Returns what went, per project and kind."""
    now = now or timezone.now()
    batch_size = batch_size or settings.EVALSITE_RETENTION_BATCH_SIZE
    pause = settings.EVALSITE_RETENTION_PAUSE_MS / 1000 if pause_seconds is None else pause_seconds
    # Every project's expiry decides what a reclaimer frees, so a pass for one project skips them.
    done = _reclaimed(now, lambda r: r.reclaim, after_batches=False) if project is None else []
    for p in _projects(project):
        for expirer in expirers():
            before = cutoff_of(p, expirer.setting, now)
            if before is None:
                continue
            total = 0
            # Until a call deletes nothing: an expirer may delete fewer than `limit` per call (runs
            # go a few at a time, each with all its results).
            while n := expirer.expire(p, before, batch_size):
                total += n
                if pause:
                    time.sleep(pause)
            done.append(Expiry(p.slug, expirer.name, before, total))
            if total:
                audit_record(
                    action="expire",
                    object_type=expirer.name,
                    object_id="",
                    object_repr=f"{total} {expirer.name.replace('_', ' ')} created before {before:%Y-%m-%d %H:%M} UTC",
                    changes={"deleted": [None, total], "created_before": [None, before.isoformat()]},
                    project=p,
                )
    if project is None:
        done += _reclaimed(now, lambda r: r.reclaim, after_batches=True)
    return done


def expired_ids(queryset, *, before: datetime, limit: int) -> list[int]:
    """The ids of up to `limit` rows of `queryset` created before `before`, oldest first, locked
    for the caller's transaction: rows another pass holds are skipped, not waited for."""
    return list(
        queryset.filter(created_at__lt=before)
        .order_by("created_at", "id")
        .select_for_update(skip_locked=True)
        .values_list("pk", flat=True)[:limit]
    )


def references_unlink(model, ids) -> None:
    """Before a quiet DELETE of `model`'s rows `ids`: every foreign key to them declared SET_NULL is
    set to null, one UPDATE per relation, as Django's deletion collector would after reading each
    row. Relations of other kinds are the caller's to delete first; the database refuses the
    DELETE of a row still referenced."""
    for relation in model._meta.related_objects:
        if relation.on_delete is models.SET_NULL:
            name = relation.field.attname
            relation.related_model._base_manager.filter(**{f"{name}__in": ids}).update(**{name: None})


def rows_delete_quietly(queryset) -> int:
    """DELETE the rows of `queryset` in one statement, without Django's per-object pre/post_delete
    signals: for bulk expiry, where the caller has already removed what names the rows by kind + id
    (apps.scores.services.subjects_forget), which those receivers would otherwise do one query per
    row. Foreign keys still hold: a row that something references fails the DELETE. Uses the
    QuerySet's _raw_delete, what Django's own deletion collector calls for its fast deletes."""
    return queryset._raw_delete(queryset.db)
