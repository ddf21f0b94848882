import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIRequestFactory

from apps.core.auth.authentication import ApiKeyAuthentication, api_key_cache
from apps.core.models import ApiKey, hash_api_key
from apps.core.services import api_key_revoke

TRACE_URL = "/api/v1/metrics/trace/nope"


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.EVALSITE_API_KEY_CACHE_SECONDS = 5
    fake = FakeClock()
    monkeypatch.setattr(api_key_cache, "clock", fake)
    api_key_cache.clear()
    yield fake
    api_key_cache.clear()


def _key(api) -> ApiKey:
    return ApiKey.objects.get(key_hash=hash_api_key(api.raw_key))


def _authenticated(api) -> bool:
    # 404 for a missing trace means the key was accepted; 401 means it was refused.
    status = api.get(TRACE_URL).status_code
    assert status in (401, 404)
    return status == 404


@pytest.mark.django_db
class TestApiKeyCache:
    def test_a_cached_key_costs_no_query(self, api, clock):
        assert _authenticated(api)
        with CaptureQueriesContext(connection) as queries:
            assert _authenticated(api)
        assert not any("core_apikey" in q["sql"] for q in queries.captured_queries)

    def test_revoked_through_the_service_is_refused_at_once_in_process(self, api, clock):
        assert _authenticated(api)
        api_key_revoke(api_key=_key(api))
        # Same process, well within the TTL: the revocation itself dropped the cached entry.
        assert not _authenticated(api)

    def test_deactivated_user_is_refused_at_once_in_process(self, api, clock):
        assert _authenticated(api)
        user = _key(api).user
        user.is_active = False
        user.save()
        assert not _authenticated(api)

    def test_revoked_by_another_process_is_refused_after_the_ttl(self, api, clock):
        assert _authenticated(api)
        # A queryset update sends no signal: to this process it looks like a revocation done by
        # another web worker, which only the expiry can bring here.
        ApiKey.objects.filter(key_hash=hash_api_key(api.raw_key)).update(revoked_at="2026-01-01T00:00:00Z")
        clock.now += 4.9
        assert _authenticated(api), "within the TTL the cached key is still honoured (the documented bound)"
        clock.now += 0.2
        assert not _authenticated(api)

    def test_zero_seconds_turns_the_cache_off(self, api, clock, settings):
        settings.EVALSITE_API_KEY_CACHE_SECONDS = 0
        assert _authenticated(api)
        ApiKey.objects.filter(key_hash=hash_api_key(api.raw_key)).update(revoked_at="2026-01-01T00:00:00Z")
        assert not _authenticated(api)

    def test_unknown_keys_are_not_cached(self, anon_api, clock):
        anon_api.credentials(HTTP_AUTHORIZATION="Bearer es_not-a-real-key")
        assert anon_api.get(TRACE_URL).status_code == 401
        assert api_key_cache.get(hash_api_key("es_not-a-real-key")) is None

    def test_requests_get_their_own_user_instance(self, api, clock):
        # Attributes a request sets on its user (permission caches) must not reach the next request.
        request = APIRequestFactory().get(TRACE_URL, HTTP_AUTHORIZATION=f"Bearer {api.raw_key}")
        first_user, _ = ApiKeyAuthentication().authenticate(request)
        first_user._perm_cache = {"stale"}
        second_user, _ = ApiKeyAuthentication().authenticate(request)
        assert second_user is not first_user and not hasattr(second_user, "_perm_cache")

    def test_last_used_is_written_once_a_minute_not_per_request(self, api, clock):
        assert _authenticated(api)
        assert _key(api).last_used_at is not None
        with CaptureQueriesContext(connection) as queries:
            assert _authenticated(api)
        assert not any(q["sql"].startswith("UPDATE") and "core_apikey" in q["sql"] for q in queries.captured_queries)


def test_each_request_gets_its_own_copy_of_the_cached_key_and_user(api, clock):
    """The cache hands out shallow copies: equal fields, but what a request sets on its user or key
    (permission caches, …) reaches neither the cache nor the next request."""
    authenticator = ApiKeyAuthentication()
    request = APIRequestFactory().get(TRACE_URL, HTTP_AUTHORIZATION=f"Bearer {api.raw_key}")
    user1, key1 = authenticator.authenticate(request)
    user2, key2 = authenticator.authenticate(request)
    cached = api_key_cache.get(key1.key_hash)
    assert key1 is not key2 and key1 is not cached and user1 is not user2 and user1 is not cached.user
    assert key1.user is user1 and key2.user is user2
    assert key1.__dict__.keys() == cached.__dict__.keys() and key1.pk == cached.pk == key2.pk
    assert user1.pk == cached.user.pk and user1.username == cached.user.username
    assert key1._state is not cached._state and key1._state.db == cached._state.db and not key1._state.adding
    user1._perm_cache = {"x"}
    key1.scopes = ["admin"]
    assert not hasattr(cached.user, "_perm_cache") and not hasattr(user2, "_perm_cache")
    assert cached.scopes != ["admin"] and key2.scopes != ["admin"]
    assert key1.effective_scopes is not None
