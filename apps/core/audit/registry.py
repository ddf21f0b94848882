"""A signal recorder for configuration rows: each app registers its own models (in its
AppConfig.ready) with `audit_register`, and every save and delete of them, wherever it comes from,
becomes one audit event.

Why signals here and explicit `audit_record` calls elsewhere: bots, rules, queues, projects,
memberships and API keys are plain rows edited through the API, the console *and* the admin's
generic forms and inlines, which do not go through one service; a receiver on the model sees every
path, and the actor still comes from the request (apps.core.audit.context). A before-state is read
in pre_save so an update records only the fields that changed, and a save that changed nothing
tracked records nothing. Changes with a meaning beyond their row (a run launched or cancelled, the
data cleared, a rubric or test set version published) are recorded explicitly where they happen.
"""

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.db import models
from django.db.models.signals import post_delete, post_save, pre_save

from apps.core.models import Project

from . import services

BEFORE = "_audit_before"
EMPTY: tuple[Any, ...] = (None, "", [], {})


@dataclass
class Audited:
    object_type: str
    fields: list[models.Field]
    object_id: Callable[[Any], str]
    # (kind: "create" | "update" | "delete", changes, instance) -> the action, or None to record nothing.
    action: Callable[[str, dict, Any], str | None]
    project: Callable[[Any, str], Project | None] | None
    on: tuple[str, ...] = field(default=("create", "update", "delete"))


registry: dict[type[models.Model], Audited] = {}

# Models whose events the code running now records itself (audit_recorded_by_caller).
_by_caller: ContextVar[frozenset[type[models.Model]]] = ContextVar("audit_by_caller", default=frozenset())


@contextlib.contextmanager
def audit_recorded_by_caller(model: type[models.Model]) -> Iterator[None]:
    """Within the block the signals record nothing for `model`: the caller writes one event itself
    for a change that spans more than the row (a bot with its tools and knowledge bases, which
    are replaced by bulk writes no signal sees), so each change is still exactly one event."""
    token = _by_caller.set(_by_caller.get() | {model})
    try:
        yield
    finally:
        _by_caller.reset(token)


def registered_state(instance: models.Model) -> dict:
    """The registered fields of `instance` as its events record them (for a caller's own event)."""
    return services.snapshot(instance, registry[type(instance)].fields)


def _kind_action(kind: str, changes: dict, instance) -> str:
    return kind


def audit_register(
    model: type[models.Model],
    *,
    object_type: str | None = None,
    exclude: tuple[str, ...] = (),
    object_id: Callable[[Any], str] | None = None,
    action: Callable[[str, dict, Any], str | None] | None = None,
    project: Callable[[Any, str], Project | None] | None = None,
    on: tuple[str, ...] = ("create", "update", "delete"),
) -> None:
    """Record `on` ("create", "update", "delete") of `model`'s rows. `exclude`: fields that are not
    configuration (counters, caches). `project(instance, kind)`: the event's project when it is not
    the row's own `project` (a project is its own; None makes the event global)."""
    registry[model] = Audited(
        object_type=object_type or str(model._meta.model_name),
        fields=services.tracked_fields(model, exclude=exclude),
        object_id=object_id or (lambda obj: str(obj.pk)),
        action=action or _kind_action,
        project=project,
        on=on,
    )
    uid = f"audit.{model._meta.label}"
    if "update" in on:
        pre_save.connect(_before_save, sender=model, dispatch_uid=f"{uid}.pre_save")
    if "create" in on or "update" in on:
        post_save.connect(_after_save, sender=model, dispatch_uid=f"{uid}.post_save")
    if "delete" in on:
        post_delete.connect(_after_delete, sender=model, dispatch_uid=f"{uid}.post_delete")


def _record(audited: Audited, kind: str, instance, changes: dict) -> None:
    if type(instance) in _by_caller.get():
        return
    action = audited.action(kind, changes, instance)
    if action is None:
        return
    project = audited.project(instance, kind) if audited.project else services.FROM_OBJECT
    services.audit_record(
        action=action,
        obj=instance,
        object_type=audited.object_type,
        object_id=audited.object_id(instance),
        changes=changes,
        project=project,
    )


def _before_save(sender, instance, raw=False, **kwargs):
    if raw or instance._state.adding or instance.pk is None or sender in _by_caller.get():
        return
    audited = registry[sender]
    instance.__dict__[BEFORE] = services.snapshot_stored(sender, instance.pk, audited.fields)


def _after_save(sender, instance, created, raw=False, **kwargs):
    if raw:  # loaddata
        return
    audited = registry[sender]
    after = services.snapshot(instance, audited.fields)
    before = instance.__dict__.pop(BEFORE, None)
    if created or before is None:
        if "create" in audited.on:
            _record(audited, "create", instance, services.created(after))
        return
    changes = services.diff(before, after)
    if changes:
        _record(audited, "update", instance, changes)


def _cascade_of_project(instance, origin) -> bool:
    """Rows deleted because their project is: the project's own delete event stands for them (and
    an event pointing at the project being deleted could not be stored)."""
    if origin is None or isinstance(instance, Project):
        return False
    if isinstance(origin, Project):
        return True
    return isinstance(origin, models.QuerySet) and origin.model is Project


def _after_delete(sender, instance, origin=None, **kwargs):
    if _cascade_of_project(instance, origin):
        return
    audited = registry[sender]
    before = services.snapshot(instance, audited.fields)
    _record(audited, "delete", instance, {name: [value, None] for name, value in before.items() if value not in EMPTY})
