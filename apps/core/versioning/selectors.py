"""Reads of versioned heads, in the contract's shapes: a head at a version is its snapshot plus
the version number and timestamps, where updated_at is when that version was published."""

from django.db.models import Q

from apps.core.errors import NotFoundError

from .models import SnapshotVersion, VersionedHead


def version_get(head: VersionedHead, version: int | None = None) -> SnapshotVersion:
    """The head's version `version`, its current one when None."""
    number = head.current_version if version is None else version
    found = head.versions.filter(version=number).first()
    if found is None:
        raise NotFoundError(f"{head._meta.verbose_name.capitalize()} {head.pk} has no version {version}")
    return found


def version_data(head: VersionedHead, version: SnapshotVersion, *, with_history: bool = False) -> dict:
    data = {
        **version.snapshot,
        "version": version.version,
        "created_at": head.created_at,
        "updated_at": version.created_at,
    }
    if with_history:
        data["changelog"] = version.changelog
        data["author"] = version.author
    return data


def head_data(head: VersionedHead) -> dict:
    """The head at its current version."""
    return version_data(head, version_get(head))


def head_list_data(heads) -> list[dict]:
    """Current versions of many heads of one kind in two queries."""
    heads = list(heads)
    if not heads:
        return []
    model = type(heads[0])
    head_key = model.versions.field.attname
    wanted = Q(pk__in=[])
    for head in heads:
        wanted |= Q(**{head_key: head.pk, "version": head.current_version})
    versions = {getattr(v, head_key): v for v in model.version_model().objects.filter(wanted)}
    return [version_data(head, versions[head.pk]) for head in heads if head.pk in versions]


def version_list(head: VersionedHead, *, count_key: str, children_key: str) -> list[dict]:
    """The head's versions, newest first, each summarised with how many rows (`children_key` of the
    snapshot, e.g. rules) it has under `count_key`."""
    head_id_key = head._meta.pk.name
    return [
        {
            head_id_key: str(head.pk),
            "version": v.version,
            "changelog": v.changelog,
            "author": v.author,
            count_key: len(v.snapshot.get(children_key, [])),
            "created_at": v.created_at,
        }
        for v in head.versions.order_by("-version")
    ]
