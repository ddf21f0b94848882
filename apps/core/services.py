from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from apps.core.errors import InvalidInputError
from apps.core.models import (
    ALL_SCOPES,
    DEFAULT_KEY_SCOPES,
    ApiKey,
    Project,
    generate_api_key,
    hash_api_key,
)
from apps.core.projects.access import key_scope_cap, role_in


def api_key_scopes_clean(*, scopes: Iterable[str], user, project: Project) -> list[str]:
    """The scopes as stored (known names, no repeats, in ALL_SCOPES order), or InvalidInputError
    naming what is unknown or beyond what `user` may hold in `project` (their role's scopes)."""
    requested = {s.strip() for s in scopes if s and s.strip()}
    unknown = sorted(requested - set(ALL_SCOPES))
    if unknown:
        raise InvalidInputError(f"Unknown scope(s): {', '.join(unknown)}. Known scopes: {', '.join(ALL_SCOPES)}.")
    if not requested:
        raise InvalidInputError("A key needs at least one scope.")
    beyond = [s for s in ALL_SCOPES if s in requested - key_scope_cap(user, project)]
    if beyond:
        role = role_in(user, project)
        if role is not None:
            raise InvalidInputError(
                f"A key of {user} cannot hold {', '.join(beyond)}: {user} is {role.value} in project {project.slug}."
            )
        if key_scope_cap(user, project):
            raise InvalidInputError(f"Only a staff user's key may hold {', '.join(beyond)}; {user} is not staff.")
        raise InvalidInputError(f"{user} is not a member of project {project.slug}: their key could do nothing.")
    return [s for s in ALL_SCOPES if s in requested]


@transaction.atomic
def api_key_create(
    *,
    username: str,
    staff: bool = False,
    name: str = "",
    scopes: Iterable[str] | None = None,
    project: Project | None = None,
) -> tuple[ApiKey, str]:
    """Create a key for `username` (creating the user if needed) in `project` (`default` if None).
    Returns the row and the raw key, which is not stored and cannot be shown again. Without
    `scopes` a key gets DEFAULT_KEY_SCOPES, or every scope when `staff` asks for a staff key."""
    if project is None:
        project = Project.objects.default()
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
    if staff and not user.is_staff:
        user.is_staff = True
    user.save()
    if scopes is None:
        scopes = ALL_SCOPES if staff else DEFAULT_KEY_SCOPES
    scopes = api_key_scopes_clean(scopes=scopes, user=user, project=project)
    raw_key = generate_api_key()
    api_key = ApiKey.objects.create(
        user=user, project=project, name=name, key_hash=hash_api_key(raw_key), prefix=raw_key[:10], scopes=scopes
    )
    return api_key, raw_key


def api_key_update(*, api_key: ApiKey, name: str, scopes: Iterable[str]) -> ApiKey:
    api_key.name = name
    api_key.scopes = api_key_scopes_clean(scopes=scopes, user=api_key.user, project=api_key.project)
    api_key.save(update_fields=["name", "scopes"])
    return api_key


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
