from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from .models import ApiKey, generate_api_key, hash_api_key


@transaction.atomic
def api_key_create(*, username: str, staff: bool = False, name: str = "") -> tuple[ApiKey, str]:
    """Create a key for `username` (creating the user if needed). Returns the row and the raw key,
    which is not stored and cannot be shown again."""
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
    if staff and not user.is_staff:
        user.is_staff = True
    user.save()
    raw_key = generate_api_key()
    api_key = ApiKey.objects.create(user=user, name=name, key_hash=hash_api_key(raw_key), prefix=raw_key[:10])
    return api_key, raw_key


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
