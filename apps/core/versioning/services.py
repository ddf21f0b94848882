"""Publishing a version: the one place that creates version rows, for every kind of head."""

from collections.abc import Callable

from django.db import IntegrityError, transaction
from pydantic import BaseModel

from apps.core.audit.services import audit_version_published
from apps.core.errors import ConflictError, NotFoundError

from .models import VersionedHead
from .selectors import version_get

# Builds the head's snapshot (without version and timestamps) from the locked head.
SnapshotOf = Callable[[VersionedHead], dict]
# The head's own columns (its bot, name, description, ...) as the content being published sets them.
HeadFields = Callable[[], dict]
# Rewrites the locked head's rows to match the snapshot about to be published.
WriteRows = Callable[[VersionedHead, dict], None]

# Keys of a stored snapshot that belong to the version row, not to the content.
_VERSION_KEYS = ("version", "created_at", "updated_at")


def snapshot_content(snapshot: dict) -> dict:
    """A stored snapshot without what the version row adds: two equal contents are one version."""
    return {k: v for k, v in snapshot.items() if k not in _VERSION_KEYS}


def version_publish(
    *,
    head: VersionedHead,
    snapshot_of: SnapshotOf,
    head_fields: HeadFields,
    write_rows: WriteRows,
    changelog: str = "",
    author: str = "",
    expected_version: int | None = None,
) -> tuple[VersionedHead, bool]:
    """Make the content `snapshot_of` describes the head's (its columns from `head_fields`, its rows
    written by `write_rows`) and publish it as the next version.

    Returns (head, published). Content equal to the current version publishes nothing. With
    expected_version, an edit based on an older version is refused (ConflictError) so two editors
    never overwrite each other silently."""
    model = type(head)
    noun = str(model._meta.verbose_name)
    with transaction.atomic():
        try:
            locked = model.objects.select_for_update().get(pk=head.pk)
        except model.DoesNotExist:
            raise NotFoundError(f"No {noun} {head.pk}") from None
        if expected_version is not None and expected_version != locked.current_version:
            raise ConflictError(
                f"{noun.capitalize()} {locked.pk} is at version {locked.current_version}; this edit is based on "
                f"version {expected_version}. Reload it and apply your change again."
            )
        snapshot = snapshot_of(locked)
        previous = snapshot_content(version_get(locked).snapshot) if locked.current_version else {}
        if locked.current_version and previous == snapshot:
            return locked, False
        for name, value in head_fields().items():
            setattr(locked, name, value)
        write_rows(locked, snapshot)
        locked.current_version += 1
        locked.save()
        try:
            # The row lock already serialises publishers; the unique (head, version) constraint is
            # the backstop if a head is ever saved without taking it.
            with transaction.atomic():
                locked.versions.create(
                    version=locked.current_version,
                    snapshot={**snapshot, "version": locked.current_version},
                    changelog=changelog,
                    author=author,
                )
        except IntegrityError:
            raise ConflictError(
                f"Version {locked.current_version} of {noun} {locked.pk} was published "
                "concurrently; reload and try again."
            ) from None
        audit_version_published(head=locked, before=previous, after=snapshot, changelog=changelog)
    return locked, True


@transaction.atomic
def version_head_create(
    *,
    model: type[VersionedHead],
    pk=None,
    snapshot_of: SnapshotOf,
    head_fields: HeadFields,
    write_rows: WriteRows,
    changelog: str = "",
    author: str = "",
) -> VersionedHead:
    """Insert a new head of `model` with primary key `pk` and publish its version 1."""
    # A pk of None is given the model's default (a fresh uuid) when the row is inserted.
    # The ignore: the plugin knows no pk on the abstract VersionedHead; every concrete head has one.
    head = model(pk=pk, **head_fields())  # type: ignore[misc]
    head.save(force_insert=True)
    version_publish(
        head=head,
        snapshot_of=snapshot_of,
        head_fields=head_fields,
        write_rows=write_rows,
        changelog=changelog or "Created",
        author=author,
    )
    head.refresh_from_db()
    return head


def version_restore(
    *,
    head: VersionedHead,
    version: int,
    author: str = "",
    content_schema: type[BaseModel],
    publish: Callable[..., tuple[VersionedHead, bool]],
) -> tuple[VersionedHead, bool]:
    """Publish an old version's content as a new version (history is never rewritten). `publish` is
    the app's publishing service, called with head, content, changelog and author."""
    old = version_get(head, version)
    content = content_schema.model_validate(snapshot_content(old.snapshot))
    return publish(head=head, content=content, changelog=f"Restored version {version}", author=author)
