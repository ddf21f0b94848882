"""Reads every app needs."""

import uuid

from apps.core.errors import NotFoundError


def object_get(queryset, object_id, *, field: str = "pk"):
    """The row of `queryset` whose UUID `field` (the primary key, or a public id such as trial_id)
    is `object_id`. A malformed id names no row, so it is a NotFoundError (404) like an unknown one,
    never a 400 or a database error."""
    noun = queryset.model._meta.verbose_name
    try:
        key = uuid.UUID(str(object_id))
    except ValueError:
        raise NotFoundError(f"No {noun} {object_id}") from None
    found = queryset.filter(**{field: key}).first()
    if found is None:
        raise NotFoundError(f"No {noun} {object_id}")
    return found
