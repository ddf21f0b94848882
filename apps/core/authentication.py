from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiKey, hash_api_key

# last_used_at is a hint for key owners, not an audit log: refresh it at most this often so a
# busy ingestion client does not turn every request into an extra UPDATE.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <key>`. A missing header falls through to the next authenticator;
    a wrong key is refused outright rather than silently treated as anonymous."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: expected 'Bearer <key>'.")
        try:
            raw_key = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid API key.") from exc
        api_key = ApiKey.objects.active().select_related("user").filter(key_hash=hash_api_key(raw_key)).first()
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        return api_key.user, api_key

    def authenticate_header(self, request):
        # Makes DRF answer 401 (with WWW-Authenticate) rather than 403 to unauthenticated clients.
        return self.keyword
