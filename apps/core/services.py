from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from apps.core.errors import InvalidInputError
from apps.core.models import ALL_SCOPES, DEFAULT_KEY_SCOPES, ApiKey, generate_api_key, hash_api_key, scopes_allowed_for


def api_key_scopes_clean(*, scopes: Iterable[str], user) -> list[str]:
    """The scopes as stored (known names, no repeats, in ALL_SCOPES order), or InvalidInputError
    naming what is unknown or beyond what `user` may hold."""
    requested = {s.strip() for s in scopes if s and s.strip()}
    unknown = sorted(requested - set(ALL_SCOPES))
    if unknown:
        raise InvalidInputError(f"Unknown scope(s): {', '.join(unknown)}. Known scopes: {', '.join(ALL_SCOPES)}.")
    if not requested:
        raise InvalidInputError("A key needs at least one scope.")
    beyond = [s for s in ALL_SCOPES if s in requested - scopes_allowed_for(user)]
    if beyond:
        raise InvalidInputError(f"Only a staff user's key may hold {', '.join(beyond)}; {user} is not staff.")
    return [s for s in ALL_SCOPES if s in requested]


@transaction.atomic
def api_key_create(
    *, username: str, staff: bool = False, name: str = "", scopes: Iterable[str] | None = None
) -> tuple[ApiKey, str]:
    """Create a key for `username` (creating the user if needed). Returns the row and the raw key,
    which is not stored and cannot be shown again. Without `scopes` a key gets DEFAULT_KEY_SCOPES,
    or every scope when `staff` asks for a staff key."""
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
    if staff and not user.is_staff:
        user.is_staff = True
    user.save()
    if scopes is None:
        scopes = ALL_SCOPES if staff else DEFAULT_KEY_SCOPES
    scopes = api_key_scopes_clean(scopes=scopes, user=user)
    raw_key = generate_api_key()
    api_key = ApiKey.objects.create(
        user=user, name=name, key_hash=hash_api_key(raw_key), prefix=raw_key[:10], scopes=scopes
    )
    return api_key, raw_key


def api_key_update(*, api_key: ApiKey, name: str, scopes: Iterable[str]) -> ApiKey:
    api_key.name = name
    api_key.scopes = api_key_scopes_clean(scopes=scopes, user=api_key.user)
    api_key.save(update_fields=["name", "scopes"])
    return api_key


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
