import importlib
import inspect

import pytest
from django.core.cache import caches
from django.db import connection
from rest_framework.test import APIClient

from apps.agentic.rules.services import enabled_rules
from apps.traces.demo import DEMO_TRACES
from tests.core.factories import ApiKeyFactory, client_with_key
from tests.traces.factories import AgentTraceFactory


def _client_with_key(username: str, staff: bool, scopes=None) -> APIClient:
    return client_with_key(ApiKeyFactory(user__username=username, user__is_staff=staff, scopes=scopes))


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """A test module's test classes are the ones it defines. Classes it imports whose names start
    with "Test" (the TestSet model, the TestSetContent schema) are the code under test, so pytest
    must neither collect them nor warn that it cannot."""
    if isinstance(collector, pytest.Module) and inspect.isclass(obj) and obj.__module__ != collector.obj.__name__:
        return []
    return None


@pytest.fixture(autouse=True)
def _fresh_evaluation_rules():
    """Each test sees the evaluation rules its own database holds, not those a previous, rolled back
    test left in this process's cache of enabled rules."""
    enabled_rules.clear()


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Each test starts with every key's LLM rate-limit allowance whole (keys' ids repeat across tests)."""
    caches["quotas"].clear()


@pytest.fixture
def api(db) -> APIClient:
    """A client authenticated with a non-staff API key holding read, ingest, evaluate and configure:
    what most tests need to set up bots, rubrics and test sets. Not review (human reviews, queue
    work) nor admin (DELETE, /clear)."""
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
        pytest.skip(
            "needs PostgreSQL (set DATABASE_URL=postgres://...): row locks, real concurrency or "
            "PostgreSQL-only storage behaviour"
        )


@pytest.fixture
def demo_traces(db):
    """The demo traces (the contract's examples: good answers, a failed one, a wrong tool) as rows,
    without going through the lifecycle services the traces tests cover."""
    for demo in DEMO_TRACES:
        session_id = demo["session_id"]
        intent, resource_type, operation = demo["intent"]
        AgentTraceFactory(
            session_id=session_id,
            agent_name=demo["agent_name"],
            user_query=demo["user_query"],
            intent_detected=intent,
            resource_type=resource_type,
            operation=operation,
            final_response=demo["final_response"],
            success=demo["success"],
            metadata={"source": "demo"},
            tool_calls=[
                {
                    "tool_name": name,
                    "tool_args": args,
                    "tool_result": result,
                    "success": ok,
                    "error": error,
                    "duration_ms": 120.0 * seq,
                    "call_id": f"{session_id}-{seq}",
                }
                for seq, (name, args, result, ok, error) in enumerate(demo["tool_calls"], start=1)
            ],
        )


from tests.fakes.openai_server import openai_server  # noqa: E402,F401  (shared fixture)


@pytest.fixture
def shipped_prices():
    """The price table as migration core/0010 ships it. Put back by the migration's own function:
    a transactional test before this one empties every table, migration data included."""
    from django.apps import apps as django_apps

    migration = importlib.import_module("apps.core.migrations.0010_modelprice_defaults")
    migration.add_prices(django_apps, None)
