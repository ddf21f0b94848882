import pytest
from django.db import connection
from rest_framework.test import APIClient

from apps.core.services import api_key_create


def _client_with_key(username: str, staff: bool, scopes=None) -> APIClient:
    _key, raw = api_key_create(username=username, staff=staff, scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.raw_key = raw
    return client


@pytest.fixture
def api(db) -> APIClient:
    """A client authenticated with a non-staff API key holding read, ingest, evaluate and configure:
    what most tests need to set up bots, rubrics and test sets. Everything but admin (DELETE, /clear)."""
    return _client_with_key("api-user", staff=False, scopes=["read", "ingest", "evaluate", "configure"])


@pytest.fixture
def default_key_api(db) -> APIClient:
    """A client authenticated with a non-staff API key made with the defaults of a new key
    (read, ingest, evaluate): what an ordinary integration gets."""
    return _client_with_key("default-key-user", staff=False)


@pytest.fixture
def staff_api(db) -> APIClient:
    """A client authenticated with a staff API key."""
    return _client_with_key("staff-user", staff=True)


@pytest.fixture
def anon_api(db) -> APIClient:
    return APIClient()


@pytest.fixture
def allow_anonymous(settings):
    settings.EVALSITE_ALLOW_ANONYMOUS = True


@pytest.fixture
def on_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL=postgres://...): row locks, real concurrency or "
                    "PostgreSQL-only storage behaviour")


from tests.fakes.openai_server import openai_server  # noqa: E402,F401  (shared fixture)
