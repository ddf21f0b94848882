"""Writing the audit trail: `audit_record`, the one writer, and the helpers that turn model rows
into the `changes` it stores ({field: [before, after]}, secrets redacted)."""

import json
import re
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from apps.core.models import AuditEvent, Project
from apps.core.projects.resolution import project_of

from .context import Actor, current_actor, current_request

# A field (or a JSON key at any depth) named like this never reaches the trail: bot secrets, key
# hashes, passwords, tokens. Only whether it was set is kept ("***", or the empty value it had).
SECRET_NAME = re.compile(r"secret|token|password|passwd|key_hash|api_key|authorization|credential", re.IGNORECASE)
REDACTED = "***"
REPR_LENGTH = 255


class _FromObject:
    """`project` not given: the object's own project, else the request's."""


FROM_OBJECT: Any = _FromObject()


def jsonable(value):
    """`value` as JSON would bring it back (datetimes and uuids as strings, choices as their value)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def redact(name: str, value):
    if SECRET_NAME.search(name):
        return value if value in (None, "", [], {}) else REDACTED
    if isinstance(value, dict):
        return {k: redact(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact("", v) for v in value]
    return value


def redact_changes(changes: dict) -> dict:
    return {name: [redact(name, side) for side in pair] for name, pair in (changes or {}).items()}


def tracked_fields(model: type[models.Model], *, exclude=()) -> list[models.Field]:
    """The model's own columns but its primary key, the timestamps Django sets itself, and its
    `project` (the event's own project says it, by slug rather than by id)."""
    return [
        f
        for f in model._meta.concrete_fields
        if not f.primary_key
        and f.name not in exclude
        and f.name != "project"
        and not getattr(f, "auto_now", False)
        and not getattr(f, "auto_now_add", False)
    ]


def snapshot(instance: models.Model, fields: list[models.Field]) -> dict:
    """The instance's values of `fields`, by field name (a foreign key by its id), JSON-shaped."""
    return jsonable({f.name: f.value_from_object(instance) for f in fields})


def snapshot_stored(model: type[models.Model], pk, fields: list[models.Field]) -> dict | None:
    """The same as `snapshot` for the row as it is in the database (None if there is none)."""
    row = model._base_manager.filter(pk=pk).values(*[f.attname for f in fields]).first()
    if row is None:
        return None
    return jsonable({f.name: row[f.attname] for f in fields})


def diff(before: dict, after: dict) -> dict:
    return {name: [before.get(name), after.get(name)] for name in after if before.get(name) != after.get(name)}


def created(after: dict) -> dict:
    """A new row's changes: the fields it was given (empty ones say nothing)."""
    return {name: [None, value] for name, value in after.items() if value not in (None, "", [], {})}


def _project_of(obj) -> Project | None:
    if isinstance(obj, Project):
        return obj
    if obj is not None and any(f.name == "project" for f in obj._meta.concrete_fields):
        return obj.project if obj.project_id is not None else None
    request = current_request()
    if request is not None:
        return project_of(request)
    return None


def audit_record(
    *,
    action: str,
    obj: models.Model | None = None,
    object_type: str | None = None,
    object_id: str | None = None,
    object_repr: str | None = None,
    changes: dict | None = None,
    project: Project | None = FROM_OBJECT,
    project_slug: str = "",
    actor: Actor | None = None,
) -> AuditEvent:
    """Append one event. `object_type`, `object_id` and `object_repr` default to `obj`'s model
    name, primary key and str(); `project` to `obj`'s project (a project is its own), or else the
    request's; None is a global event (creating a project). `actor` defaults to the request's
    user or API key (apps.core.audit.context), or "system" outside a request. `changes` is
    {field: [before, after]}; values of fields named like secrets are replaced by "***"."""
    if project is FROM_OBJECT:
        project = _project_of(obj)
    actor = actor or current_actor()
    if obj is not None:
        object_type = object_type or obj._meta.model_name
        object_id = object_id if object_id is not None else str(obj.pk)
        object_repr = object_repr if object_repr is not None else str(obj)
    return AuditEvent.objects.create(
        project=project,
        project_slug=project.slug if project is not None else project_slug,
        actor=actor.label[:200],
        actor_user=actor.user if getattr(actor.user, "pk", None) else None,
        actor_key=actor.key,
        action=action,
        object_type=object_type or "",
        object_id=(object_id or "")[:255],
        object_repr=(object_repr or "")[:REPR_LENGTH],
        changes=redact_changes(jsonable(changes or {})),
    )


def audit_version_published(*, head: models.Model, before: dict, after: dict, changelog: str = "") -> AuditEvent:
    """A rubric's or a test set's new version (apps.core.versioning): "create" for version 1, else
    "update", with the content's top-level keys that changed (a list of rules or items whole)."""
    version = head.current_version  # type: ignore[attr-defined]
    changes = diff(before, after) if before else created(after)
    changes["version"] = [version - 1 or None, version]
    if changelog:
        changes["changelog"] = [None, changelog]
    return audit_record(
        action="create" if version == 1 else "update",
        obj=head,
        object_type=str(head._meta.verbose_name).replace(" ", "_"),
        changes=changes,
    )


def fields_set(obj: models.Model, names: tuple[str, ...]) -> dict:
    """`changes` saying what a new `obj` was given in `names` (the non-empty ones)."""
    fields = [obj._meta.get_field(name) for name in names]
    return created(snapshot(obj, fields))  # type: ignore[arg-type]
