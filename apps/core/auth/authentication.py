import threading
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.base import ModelState
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions

from apps.core.llm.usage import attribute_to_key
from apps.core.models import ApiKey, Membership, Project, hash_api_key
from apps.core.projects.access import key_scope_cap

# last_used_at is a hint for key owners, not an audit log: refresh it at most this often so a
# busy ingestion client does not turn every request into an extra UPDATE.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiKeyCache:
    """Recently authenticated keys of this process, by key hash, for EVALSITE_API_KEY_CACHE_SECONDS.

    An agent recording each tool call sends many small requests with one key; looking the key and
    its user up every time was half the cost of such a request. Whole ApiKey rows (with their user,
    their project and the cap the owner's role puts on their scopes) are kept, so every field an
    authorization check or the request's project reads comes along. Saving or deleting a key or
    a user through the ORM (the revoke service, the admin, deactivating a user) drops its entries
    in this process at once; other processes keep using what they hold until it expires, so a
    revocation takes effect everywhere within the TTL. So does a change of membership (the owner's
    role caps the key) or of a project's settings (redaction applies to what its keys send).
    Unknown keys are never cached: a wrong key costs a query each time rather than memory.
    """

    # Only valid keys get in, so this is only reached by a deployment with that many live keys.
    MAX_ENTRIES = 10_000

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._entries: dict[str, tuple[float, ApiKey]] = {}
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> ApiKey | None:
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        expires, api_key = entry
        if self.clock() >= expires:
            self._entries.pop(key_hash, None)
            return None
        return api_key

    def put(self, api_key: ApiKey) -> None:
        ttl = settings.EVALSITE_API_KEY_CACHE_SECONDS
        if ttl <= 0:
            return
        with self._lock:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[api_key.key_hash] = (self.clock() + ttl, api_key)

    def forget_key(self, key_hash: str) -> None:
        with self._lock:
            self._entries.pop(key_hash, None)

    def forget_user(self, user_id) -> None:
        with self._lock:
            for key_hash in [h for h, (_, k) in self._entries.items() if k.user_id == user_id]:
                del self._entries[key_hash]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


api_key_cache = ApiKeyCache()


def _forget_api_key(sender, instance, **kwargs):
    api_key_cache.forget_key(instance.key_hash)


def _forget_user(sender, instance, **kwargs):
    api_key_cache.forget_user(instance.pk)


def _forget_member(sender, instance, **kwargs):
    api_key_cache.forget_user(instance.user_id)


def _forget_all(sender, instance, **kwargs):
    api_key_cache.clear()


post_save.connect(_forget_api_key, sender=ApiKey, dispatch_uid="api_key_cache_key_saved")
post_delete.connect(_forget_api_key, sender=ApiKey, dispatch_uid="api_key_cache_key_deleted")
post_save.connect(_forget_user, sender=get_user_model(), dispatch_uid="api_key_cache_user_saved")
post_delete.connect(_forget_user, sender=get_user_model(), dispatch_uid="api_key_cache_user_deleted")
post_save.connect(_forget_member, sender=Membership, dispatch_uid="api_key_cache_member_saved")
post_delete.connect(_forget_member, sender=Membership, dispatch_uid="api_key_cache_member_deleted")
post_save.connect(_forget_all, sender=Project, dispatch_uid="api_key_cache_project_saved")
post_delete.connect(_forget_all, sender=Project, dispatch_uid="api_key_cache_project_deleted")


def _shallow_copy(instance):
    """What copy.copy does to a model instance (its __dict__ and its _state, fields cache included,
    copied one level deep), without pickle's __reduce__/__getstate__ round trip, which cost 0.05 ms
    of a ~1 ms request for the key and its user."""
    clone = instance.__class__.__new__(instance.__class__)
    clone.__dict__ = instance.__dict__.copy()
    state = ModelState()
    state.__dict__ = instance._state.__dict__.copy()
    if "fields_cache" in state.__dict__:
        state.fields_cache = state.fields_cache.copy()
    clone._state = state
    return clone


def _request_copy(api_key: ApiKey) -> ApiKey:
    # Each request gets its own instances: code that sets attributes on request.user (permission
    # caches, for one) must not leak them into other requests or threads through the cache.
    key = _shallow_copy(api_key)
    key.user = _shallow_copy(api_key.user)
    key.project = _shallow_copy(api_key.project)
    return key


def _authorization_header(request) -> bytes:
    # DRF's get_authorization_header, from META: it goes through request.headers, which builds a
    # dict of every header on first use (0.03 ms), and on an ingestion call nothing else needs it.
    auth = request.META.get("HTTP_AUTHORIZATION", b"")
    return auth.encode(HTTP_HEADER_ENCODING) if isinstance(auth, str) else auth


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <key>`. A missing header falls through to the next authenticator;
    a wrong key is refused outright rather than silently treated as anonymous."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = _authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: expected 'Bearer <key>'.")
        try:
            raw_key = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid API key.") from exc
        key_hash = hash_api_key(raw_key)
        cached = api_key_cache.get(key_hash)
        if cached is None:
            cached = ApiKey.objects.active().select_related("user", "project").filter(key_hash=key_hash).first()
            if cached is None:
                raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
            cached.owner_scope_cap = key_scope_cap(cached.user, cached.project)
            api_key_cache.put(cached)
        now = timezone.now()
        if cached.last_used_at is None or now - cached.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=cached.pk).update(last_used_at=now)
            cached.last_used_at = now
        api_key = _request_copy(cached)
        attribute_to_key(api_key.pk)
        return api_key.user, api_key

    def authenticate_header(self, request):
        # Makes DRF answer 401 (with WWW-Authenticate) rather than 403 to unauthenticated clients.
        return self.keyword
