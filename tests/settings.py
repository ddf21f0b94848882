"""Test settings: the real settings module, with what a test run needs and a developer should not
have to export. Everything else (DATABASE_URL above all) still comes from the environment, so the
same suite runs on SQLite and on PostgreSQL."""

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-deployment")
os.environ.setdefault("EVALSITE_VAR_DIR", os.path.join(tempfile.gettempdir(), "evalsite-test-var"))
# Unit tests run Celery tasks in-process; the integration tests start a real worker instead.
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
# The fake bots and LLM servers listen on loopback; the outbound guard refuses loopback unless told
# otherwise. Tests of the guard itself set EVALSITE_OUTBOUND_ALLOW back to [] with `settings`.
os.environ["EVALSITE_OUTBOUND_ALLOW"] = "127.0.0.1"
# Never let a developer's real LLM or metrics backend configuration leak into tests.
for name in (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "PROMETHEUS_URL",
    "GRAFANA_URL",
    "GRAFANA_DATASOURCE_UID",
    "GRAFANA_TOKEN",
    # SSO is off in tests unless a test turns it on (tests/oidc, against its own provider).
    "EVALSITE_OIDC_ISSUER",
    "EVALSITE_OIDC_CLIENT_ID",
    "EVALSITE_OIDC_CLIENT_SECRET",
    "EVALSITE_OIDC_ROLE_MAP",
    "EVALSITE_PASSWORD_LOGIN",
):
    os.environ.pop(name, None)

from evalsite.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not the default in-memory database, so a real Celery worker process started by the
    # integration tests can open the same test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")}  # noqa: F405

# Test clients and the browser tests speak plain HTTP to the app. The HTTPS defaults that DEBUG off
# implies are checked in a production-like process by tests/core/test_ops.py.
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
SECURE_PROXY_SSL_HEADER = None

# Rate-limit counters per test process, cleared before every test (tests/conftest.py): the default
# files under EVALSITE_VAR_DIR would be shared by concurrent test runs whose keys have the same ids.
CACHES["quotas"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "quotas"}  # noqa: F405
