"""evalsite settings: everything that varies between machines comes from the environment.

Every variable read here is documented in docs/configuration.md. The defaults are the
embedded setup (`make run`, tests): a SQLite file and a filesystem Celery broker under `var/`, and
the heuristic judge because no LLM is configured.
"""

import ipaddress
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("EVALSITE_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    configured = os.environ.get("SECRET_KEY", "").strip()
    if configured:
        return configured
    # A checkout's own key: `make install` and `make run` (bin/run-local) keep one here, so every
    # manage.py command works in it with no variable set. A deployment sets SECRET_KEY instead.
    key_file = VAR_DIR / "secret_key"
    kept = key_file.read_text().strip() if key_file.exists() else ""
    if kept:
        return kept
    if not DEBUG:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be set when DEBUG is off (or kept in {key_file}: `make install` makes one "
            "for a local checkout; DEBUG=1 makes one on first use)."
        )
    # Local use only: a key generated once and kept, so sessions survive restarts. O_EXCL and the
    # mode: the file is never readable by others, even for a moment, and two processes starting at
    # once cannot overwrite each other's key.
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return key_file.read_text().strip()
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# HTTPS. With DEBUG off evalsite assumes it is served over HTTPS by a TLS-terminating proxy that
# sets X-Forwarded-Proto, so everything is on by default; each can be turned off (bin/run-local
# does, serving plain HTTP on loopback).
_https = not DEBUG
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", _https)
# Load balancers and Prometheus talk plain HTTP to the app server itself, not through the proxy.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", _https)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", _https)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if _https else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", _https)
# Preloading is a promise to browsers that is slow to take back: the domain's owner opts in.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# The header the proxy sets to "https" (its value is trusted, so the app must only be reachable
# through that proxy); empty turns it off.
_proxy_ssl_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto" if _https else "").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)

INSTALLED_APPS = [
    # django.contrib.admin, whose site also admits project members who are not staff (SSO users).
    "apps.core.admin_apps.AdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_prometheus",
    "apps.core",
    "apps.traces",
    "apps.scores",
    "apps.agentic",
    "apps.nlquery",
    "apps.rag",
    "apps.bots",
    "apps.rubrics",
    "apps.testsets",
    "apps.runs",
    "apps.queues",
    "apps.console",
    "axes",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    # Runs before anything reads the body, so an oversized request is refused unparsed.
    "apps.core.http.middleware.BodySizeLimitMiddleware",
    "apps.core.http.middleware.NulCharacterMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The request is the audit trail's actor while it is served (apps.core.audit.context).
    "apps.core.audit.context.AuditContextMiddleware",
    # Each request's platform LLM calls and tokens, billed to its API key (KeyUsageDay).
    "apps.core.http.middleware.LLMUsageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # django-prometheus' own, with made-up HTTP methods folded into one label value.
    "apps.core.metrics.access.BoundedPrometheusAfterMiddleware",
    # Last, as django-axes asks: turns a refused login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"
ASGI_APPLICATION = "evalsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "").strip() or f"sqlite:///{VAR_DIR / 'evalsite.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # The web server and the Celery worker write to the same file: WAL lets readers run beside a
    # writer, and IMMEDIATE transactions take the write lock up front instead of failing mid-way
    # with "database is locked" when two writers upgrade their locks at once.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # PostgreSQL's JIT compiles a plan whose estimated cost is high; for the grouped reads over a
    # large run's results (apps/runs/aggregates.py) compiling took longer than running: 5.9 s
    # instead of 2.6 s for one run of 100,000 results. Other queries here are too cheap to be
    # compiled. `?options=...` in DATABASE_URL sets other server options (and can turn it back on).
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("options", "-c jit=off")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve straight from the finders so a fresh checkout needs no collectstatic step.
WHITENOISE_USE_FINDERS = True

# The console's own login: the admin's refuses non-staff users, who may read the console.
LOGIN_URL = "/console/login/"

# Login throttling (django-axes), for the password logins: /console/login/ and /admin/login/. After
# EVALSITE_LOGIN_FAILURE_LIMIT failures for a username, or from an address, each within
# EVALSITE_LOGIN_COOLOFF_MINUTES of the one before, that login is refused for the cool-off, the right
# password included. API keys do not go through django's authenticate(), so axes never sees them:
# a wrong key stays a 401, and a locked-out user's agents keep working.
EVALSITE_LOGIN_FAILURE_LIMIT = env_int("EVALSITE_LOGIN_FAILURE_LIMIT", 10)
EVALSITE_LOGIN_COOLOFF_MINUTES = env_int("EVALSITE_LOGIN_COOLOFF_MINUTES", 15)
# Reverse proxies in front that append the client's address to X-Forwarded-For. Behind one, the
# connection's address is the proxy's: with 0 there, every failure would count against one address.
EVALSITE_TRUSTED_PROXY_COUNT = env_int("EVALSITE_TRUSTED_PROXY_COUNT", 0)

# Single sign-on (OpenID Connect, mozilla-django-oidc; apps/core/auth/oidc). On when an issuer is set.
# The provider's endpoints and signing keys come from {issuer}/.well-known/openid-configuration,
# fetched on the first SSO login and cached, so evalsite starts (and manage.py runs) while the
# provider is down.
EVALSITE_OIDC_ISSUER = os.environ.get("EVALSITE_OIDC_ISSUER", "").strip().rstrip("/")
EVALSITE_OIDC_CLIENT_ID = os.environ.get("EVALSITE_OIDC_CLIENT_ID", "").strip()
EVALSITE_OIDC_CLIENT_SECRET = os.environ.get("EVALSITE_OIDC_CLIENT_SECRET", "").strip()
EVALSITE_OIDC_GROUPS_CLAIM = os.environ.get("EVALSITE_OIDC_GROUPS_CLAIM", "").strip() or "groups"
# Some providers send the groups claim only for a scope of that name (Okta: "groups").
EVALSITE_OIDC_SCOPES = os.environ.get("EVALSITE_OIDC_SCOPES", "").strip() or "openid email profile"
# Off only when SSO is on: otherwise nobody could log in to the console or the admin. API keys are
# not logins and keep working either way.
EVALSITE_PASSWORD_LOGIN = env_bool("EVALSITE_PASSWORD_LOGIN", True)
EVALSITE_SSO_ENABLED = bool(EVALSITE_OIDC_ISSUER)


def _oidc_role_map():
    # A pure parser (no models), so settings can use it: a typo stops evalsite here, naming the entry.
    from apps.core.auth.oidc.config import RoleMapError, parse_role_map

    try:
        return parse_role_map(os.environ.get("EVALSITE_OIDC_ROLE_MAP", ""))
    except RoleMapError as exc:
        raise ImproperlyConfigured(f"EVALSITE_OIDC_ROLE_MAP: {exc}") from None


EVALSITE_OIDC_ROLE_MAP = _oidc_role_map()
if EVALSITE_SSO_ENABLED:
    if not EVALSITE_OIDC_ISSUER.startswith(("https://", "http://")):
        raise ImproperlyConfigured("EVALSITE_OIDC_ISSUER must be an http(s) URL")
    _missing = [name for name in ("EVALSITE_OIDC_CLIENT_ID", "EVALSITE_OIDC_CLIENT_SECRET") if not globals()[name]]
    if _missing:
        raise ImproperlyConfigured(f"EVALSITE_OIDC_ISSUER is set, so {' and '.join(_missing)} must be set too")
elif not EVALSITE_PASSWORD_LOGIN:
    raise ImproperlyConfigured("EVALSITE_PASSWORD_LOGIN=0 needs EVALSITE_OIDC_ISSUER: nobody could log in")
# mozilla-django-oidc's own settings; the endpoints are not among them (they come from discovery).
OIDC_RP_CLIENT_ID = EVALSITE_OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = EVALSITE_OIDC_CLIENT_SECRET
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = EVALSITE_OIDC_SCOPES
OIDC_USE_PKCE = True
# client_secret_basic, the token endpoint's default method (RFC 6749 2.3.1), keeps the secret out of
# the request body.
OIDC_TOKEN_USE_BASIC_AUTH = True
OIDC_TIMEOUT = 10
LOGIN_REDIRECT_URL = "/console/"
LOGIN_REDIRECT_URL_FAILURE = "/console/login/?sso=failed"

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out login before the password is even checked.
    "axes.backends.AxesStandaloneBackend",
]
# Without the password backend no password authenticates anywhere, and sessions that a password
# opened end at the switch (their backend is no longer listed).
if EVALSITE_PASSWORD_LOGIN:
    AUTHENTICATION_BACKENDS.append("django.contrib.auth.backends.ModelBackend")
if EVALSITE_SSO_ENABLED:
    AUTHENTICATION_BACKENDS.append("apps.core.auth.oidc.backend.OidcBackend")
# Authenticates nobody: it gives members the Django model permissions of the project-scoped admin
# pages by their roles, which those pages narrow to the role in the session's project.
AUTHENTICATION_BACKENDS.append("apps.core.admin.scoping.ProjectRoleBackend")
AXES_FAILURE_LIMIT = EVALSITE_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=EVALSITE_LOGIN_COOLOFF_MINUTES)
# Either one locks: a username (guessing one account's password from many addresses) or an address
# (trying many usernames from one place).
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# Attempts during a lockout neither count nor extend it: it ends a cool-off after it began, so
# someone hammering an account cannot keep its owner out for ever.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_CLIENT_IP_CALLABLE = "apps.core.auth.login_throttle.client_address"
AXES_LOCKOUT_CALLABLE = "apps.console.views.account.locked_out"
AXES_HTTP_RESPONSE_CODE = 429
# Off: axes logs a banner at INFO on every start-up, into the output of every manage.py command and bench.
AXES_VERBOSE = False

# Requests larger than this are answered 413 before their body is read.
EVALSITE_MAX_BODY_BYTES = env_int("EVALSITE_MAX_BODY_BYTES", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = EVALSITE_MAX_BODY_BYTES
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

# Anonymous clients may use the non-destructive API only when this is switched on explicitly,
# for trusted local networks and old clients that send no key.
EVALSITE_ALLOW_ANONYMOUS = env_bool("EVALSITE_ALLOW_ANONYMOUS", False)
# A process reuses an API key it has authenticated (with its user) for this long. Revoking a key or
# deactivating a user takes effect at once in the process that did it, and in the others within
# this many seconds; 0 looks the key up on every request.
EVALSITE_API_KEY_CACHE_SECONDS = env_int("EVALSITE_API_KEY_CACHE_SECONDS", 5)
# A trace that stays active longer than this is marked failed by the periodic reaper.
EVALSITE_TRACE_TIMEOUT_SECONDS = env_int("EVALSITE_TRACE_TIMEOUT_SECONDS", 3600)
# Tool calls per page of a trace read (GET /trace/{id}, its /tool-calls pages, the console's trace
# page): a trace of 60,000 calls answers with its first page and a link to the next.
EVALSITE_TRACE_TOOL_CALLS_PAGE = env_int("EVALSITE_TRACE_TOOL_CALLS_PAGE", 500)
# OTLP receiver (POST /v1/traces). The compressed body is bounded by EVALSITE_MAX_BODY_BYTES; this
# bounds it once inflated, so a gzip bomb is refused after at most this many bytes of output.
EVALSITE_OTLP_MAX_DECOMPRESSED_BYTES = env_int("EVALSITE_OTLP_MAX_DECOMPRESSED_BYTES", 64 * 1024 * 1024)
# Concatenated gzip members one body may hold (exporters send one); more is a 400.
EVALSITE_OTLP_MAX_GZIP_MEMBERS = env_int("EVALSITE_OTLP_MAX_GZIP_MEMBERS", 64)
# What one export may hold before it is refused with 413, unmapped: spans, and attribute values
# (resource and span attributes, array and kvlist items included).
EVALSITE_OTLP_MAX_SPANS_PER_REQUEST = env_int("EVALSITE_OTLP_MAX_SPANS_PER_REQUEST", 20_000)
EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST = env_int("EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST", 250_000)
# Attributes read per span, as OpenTelemetry's attribute count limit: the first ones are kept, the
# rest dropped and counted (`_dropped_attributes` in the span's kept attributes).
EVALSITE_OTLP_MAX_ATTRIBUTES_PER_SPAN = env_int("EVALSITE_OTLP_MAX_ATTRIBUTES_PER_SPAN", 128)
# Exports one server process handles at once; more are answered 429 with Retry-After (exporters retry).
EVALSITE_OTLP_MAX_IN_FLIGHT = env_int("EVALSITE_OTLP_MAX_IN_FLIGHT", 4)
# Retry-After (seconds) on 429 and 503 answers.
EVALSITE_OTLP_RETRY_AFTER_SECONDS = env_int("EVALSITE_OTLP_RETRY_AFTER_SECONDS", 2)
# How long an export waits for another request holding the same trace (PostgreSQL) before 503.
EVALSITE_OTLP_LOCK_TIMEOUT_MS = env_int("EVALSITE_OTLP_LOCK_TIMEOUT_MS", 5000)
# Unmapped span attributes kept per trace (in its metadata), serialised size.
EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES = env_int("EVALSITE_OTLP_MAX_ATTRIBUTES_BYTES", 32 * 1024)
# Span ids are remembered this long to ignore re-sent batches; children whose root never came are
# dropped after it too.
EVALSITE_OTLP_SPAN_RETENTION_HOURS = env_int("EVALSITE_OTLP_SPAN_RETENTION_HOURS", 72)
# The ingestion ledger keeps one entry per request this long, then hourly sums (same totals): every
# read of it (a scrape of /metrics, the API, the console) sums the per-request entries left.
EVALSITE_LEDGER_COMPACT_AFTER_HOURS = env_int("EVALSITE_LEDGER_COMPACT_AFTER_HOURS", 2)
# Per-trace caps of OTLP assembly: tool calls stored per trace, and spans kept waiting for a root
# that has not arrived. Beyond them spans are dropped, counted on the trace (truncated, dropped) and
# in the ingestion ledger ("trace_cap"). seq values are spaced to fit the tool call cap.
EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE = env_int("EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE", 10_000)
EVALSITE_OTLP_MAX_SPANS_PER_TRACE = env_int("EVALSITE_OTLP_MAX_SPANS_PER_TRACE", 20_000)
# Waiting spans claimed and merged per transaction when a trace is assembled: bounds a worker's
# memory and lock time whatever the number of children that waited.
EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS = env_int("EVALSITE_OTLP_ASSEMBLY_CHUNK_SPANS", 2000)
# How often the reaper merges children still waiting for a trace that exists (an interrupted assembly).
EVALSITE_OTLP_SETTLE_INTERVAL_SECONDS = env_int("EVALSITE_OTLP_SETTLE_INTERVAL_SECONDS", 60)
# How long one bot turn may take before the item fails with a timeout.
# Where people reach this evalsite: `evalrun` prints links to the console's pages under it, and its
# JUnit report links each testcase. The default is what `make run` serves (bin/run-local binds
# 127.0.0.1:$PORT, 8001 unless PORT says otherwise), so links work in a local checkout as they are.
EVALSITE_BASE_URL = (
    os.environ.get("EVALSITE_BASE_URL", "").strip().rstrip("/") or f"http://127.0.0.1:{env_int('PORT', 8001)}"
)
EVALSITE_BOT_TIMEOUT_SECONDS = env_int("EVALSITE_BOT_TIMEOUT_SECONDS", 60)
# A running item whose worker has not signalled for this long is re-queued (or failed after 3 tries).
# A living worker beats every quarter of it even during a long bot turn, so this only bounds how
# long a crashed worker's item waits.
EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS = env_int("EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS", 300)
# How many of one item's verdicts (criteria and rules) are judged at once. A run holds at most
# `concurrency` items in flight, so it never has more than concurrency x this judge requests open.
EVALSITE_JUDGE_CONCURRENCY_PER_ITEM = env_int("EVALSITE_JUDGE_CONCURRENCY_PER_ITEM", 4)
# How an LLM judge asks for an item's verdicts: "off", one request per criterion and per rule;
# "on", one request per item answering all of them (fewer requests and tokens, but the model judges
# them together, so verdicts may differ: its fingerprint differs and comparisons say so); "auto", one
# per item while the judge server takes json_schema structured output, else one per verdict. Read by
# the worker when it judges an item. The heuristic judge makes no requests and is unaffected.
EVALSITE_JUDGE_BATCH = os.environ.get("EVALSITE_JUDGE_BATCH", "").strip().lower() or "off"
if EVALSITE_JUDGE_BATCH not in ("auto", "on", "off"):
    raise ImproperlyConfigured(f"EVALSITE_JUDGE_BATCH must be auto, on or off, got {EVALSITE_JUDGE_BATCH!r}")

# Requests to addresses users configure (bot endpoints) go only to public addresses, except the
# networks (CIDRs) and host names listed here, e.g. "10.20.0.0/16,bots.internal". Empty: public only.
EVALSITE_OUTBOUND_ALLOW = env_list("EVALSITE_OUTBOUND_ALLOW", [])
# A response to such a request larger than this is cut off with an error.
EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES = env_int("EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES", 1024 * 1024)
# Fernet keys (comma-separated; the first encrypts, all decrypt) for bot secrets at rest. Empty: a
# key derived from SECRET_KEY. The entry SECRET_KEY stands for that derived key, so a move to
# explicit keys is "NEW_KEY,SECRET_KEY", then `manage.py rotate_bot_secrets`, then "NEW_KEY".
EVALSITE_SECRET_KEY_ENCRYPTION = env_list("EVALSITE_SECRET_KEY_ENCRYPTION", [])

# LLM judge. With no key and no base URL, the deterministic heuristic judge is used.
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
EVALSITE_JUDGE_MODEL = os.environ.get("EVALSITE_JUDGE_MODEL", "gpt-4o-mini")
EVALSITE_EMBEDDING_MODEL = os.environ.get("EVALSITE_EMBEDDING_MODEL", "text-embedding-3-small")
# Per request; a call makes at most 3 attempts, waiting BACKOFF, 2×BACKOFF, … between them.
EVALSITE_LLM_TIMEOUT_SECONDS = float(os.environ.get("EVALSITE_LLM_TIMEOUT_SECONDS", "") or 30)
EVALSITE_LLM_BACKOFF_SECONDS = float(os.environ.get("EVALSITE_LLM_BACKOFF_SECONDS", "") or 1.0)
# Agentic evaluations: sessions judged at once by an LLM judge in one batch request, and the most
# rows GET /export returns inline (larger exports stream with download=true).
EVALSITE_AGENTIC_BATCH_CONCURRENCY = env_int("EVALSITE_AGENTIC_BATCH_CONCURRENCY", 4)
EVALSITE_AGENTIC_EXPORT_INLINE_MAX_ROWS = env_int("EVALSITE_AGENTIC_EXPORT_INLINE_MAX_ROWS", 100_000)
# Online evaluation rules judge an OTLP trace this long after its root span arrived, so children an
# exporter sends in a later batch (BatchSpanProcessor flushes every 5 s) are part of what is judged.
EVALSITE_ONLINE_EVALUATION_OTLP_SETTLE_SECONDS = env_int("EVALSITE_ONLINE_EVALUATION_OTLP_SETTLE_SECONDS", 10)
# How long a process keeps the list of enabled rules it consults at every trace completion.
EVALSITE_ONLINE_EVALUATION_RULES_CACHE_SECONDS = env_int("EVALSITE_ONLINE_EVALUATION_RULES_CACHE_SECONDS", 5)

# Quotas: what one key may make the platform spend (docs/configuration.md, "Quotas").
# A run may hold at most this many attempts (items x repeats); a larger launch is refused (422).
EVALSITE_MAX_RUN_ATTEMPTS = env_int("EVALSITE_MAX_RUN_ATTEMPTS", 20_000)
# LLM models a request may name as its judge, besides EVALSITE_JUDGE_MODEL (always allowed).
EVALSITE_JUDGE_MODELS = env_list("EVALSITE_JUDGE_MODELS", [])
# The most sessions one request may have the LLM judge evaluate (each is one request per metric).
EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST = env_int("EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST", 100)
# LLM-spending requests per key (per user for a session, per address without either):
# "<n>/<second|minute|hour|day>" (DRF's notation: "60/min", "1000/day"); "off" turns it off.
EVALSITE_LLM_RATE = os.environ.get("EVALSITE_LLM_RATE", "").strip() or "60/min"
if EVALSITE_LLM_RATE.lower() != "off":
    try:
        _rate_count, _rate_period = EVALSITE_LLM_RATE.split("/")
        if int(_rate_count) < 1 or _rate_period.strip()[:1].lower() not in "smhd" or not _rate_period.strip():
            raise ValueError
    except ValueError:
        raise ImproperlyConfigured(
            f'EVALSITE_LLM_RATE must look like "60/min" or be "off", got {EVALSITE_LLM_RATE!r}'
        ) from None
# Where the rate limit's counters live, shared by every process: a Redis URL (needed when web
# processes run on more than one machine), or by default files under EVALSITE_VAR_DIR (one machine).
EVALSITE_RATE_LIMIT_CACHE_URL = os.environ.get("EVALSITE_RATE_LIMIT_CACHE_URL", "").strip()
CACHES = {
    # Per-process memory. evalsite keeps nothing of its own here: a finished run's figures and a
    # comparison of two finished runs are stored in the database (EvaluationRun.digest, RunComparison).
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "quotas": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": EVALSITE_RATE_LIMIT_CACHE_URL,
            "KEY_PREFIX": "evalsite-quotas",
        }
        if EVALSITE_RATE_LIMIT_CACHE_URL
        else {
            "BACKEND": "apps.core.llm.quota_cache.LockedFileBasedCache",
            "LOCATION": str(VAR_DIR / "cache" / "quotas"),
        }
    ),
}

# Metrics backend of the natural-language query page: a Prometheus HTTP API, or the same through
# Grafana's datasource proxy. PROMETHEUS_URL wins when both are set. The token is a secret: it is
# only ever sent to Grafana, never logged nor shown.
PROMETHEUS_URL = os.environ.get("PROMETHEUS_URL", "").strip()
GRAFANA_URL = os.environ.get("GRAFANA_URL", "").strip()
GRAFANA_DATASOURCE_UID = os.environ.get("GRAFANA_DATASOURCE_UID", "").strip()
GRAFANA_TOKEN = os.environ.get("GRAFANA_TOKEN", "").strip()
METRICS_BACKEND_TIMEOUT_SECONDS = env_int("METRICS_BACKEND_TIMEOUT_SECONDS", 10)

# Who may scrape /metrics: a bearer token, and/or scrapers' networks (CIDRs, direct connections
# only). Unset, the networks default to loopback without a token and to none with one.
EVALSITE_METRICS_TOKEN = os.environ.get("EVALSITE_METRICS_TOKEN", "").strip()
EVALSITE_METRICS_ALLOW = env_list("EVALSITE_METRICS_ALLOW", []) if "EVALSITE_METRICS_ALLOW" in os.environ else None
for _network in EVALSITE_METRICS_ALLOW or []:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as exc:
        raise ImproperlyConfigured(f"EVALSITE_METRICS_ALLOW: {exc}") from None
# Label values taken from ingested data (agent names, operations, rule names) keep this many of their
# most frequent values in /metrics; the rest are counted under "other", so a scrape stays small.
EVALSITE_METRICS_MAX_LABEL_VALUES = env_int("EVALSITE_METRICS_MAX_LABEL_VALUES", 50)
if EVALSITE_METRICS_MAX_LABEL_VALUES < 0:
    raise ImproperlyConfigured("EVALSITE_METRICS_MAX_LABEL_VALUES must be 0 or more")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.core.auth.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.core.auth.permissions.ApiAccess"],
    "DEFAULT_RENDERER_CLASSES": ["apps.core.api.renderers.OrjsonRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.core.api.parsers.OrjsonParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "apps.core.api.negotiation.ApiContentNegotiation",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "apps.core.api.openapi.ApiAutoSchema",
    "EXCEPTION_HANDLER": "apps.core.api.handlers.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "evalsite API",
    "DESCRIPTION": "Evaluation platform for AI agents and RAG systems.",
    "VERSION": "1.0.0",
    # Request and response models are pydantic, whose JSON Schema (type: null, …) is OpenAPI 3.1.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and docs are read like any other endpoint: a key or a session, or nothing when
    # EVALSITE_ALLOW_ANONYMOUS says the network is trusted (drf-spectacular's default is AllowAny).
    "SERVE_PERMISSIONS": REST_FRAMEWORK["DEFAULT_PERMISSION_CLASSES"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Choice sets that several models share, or fields named alike with different choices: name each once.
    "ENUM_NAME_OVERRIDES": {
        "LevelEnum": ["high", "medium", "low"],
        "RunStatusEnum": ["pending", "running", "completed", "failed", "cancelled"],
        "VerdictStatusEnum": ["ok", "skipped", "error"],
        "QueueKindEnum": ["run_result", "agentic_evaluation", "rag_evaluation"],
        "QueueVerdictKindEnum": ["criterion", "rule", "metric"],
        "ReviewKindEnum": ["criterion", "rule"],
        # Alignment trials and anchor checks: a judging job's states.
        "JudgeJobStatusEnum": ["pending", "running", "done", "failed"],
    },
}

# Celery: the filesystem transport needs no server; production points this at Redis or RabbitMQ.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip() or "filesystem://"
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "celery" / "broker"
    (VAR_DIR / "celery" / "processed").mkdir(parents=True, exist_ok=True)
    _broker_dir.mkdir(parents=True, exist_ok=True)
    (VAR_DIR / "celery" / "control").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(VAR_DIR / "celery" / "processed"),
        # Broadcast (control) messages; kombu's default is ./control in the working directory.
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
# Results are written to the database by the tasks themselves; no result backend is needed.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Retention (apps.core.retention): rows deleted per transaction, the pause between two, and how often
# Celery beat runs a pass.
EVALSITE_RETENTION_BATCH_SIZE = env_int("EVALSITE_RETENTION_BATCH_SIZE", 2000)
EVALSITE_RETENTION_PAUSE_MS = env_int("EVALSITE_RETENTION_PAUSE_MS", 10)
EVALSITE_RETENTION_INTERVAL_SECONDS = env_int("EVALSITE_RETENTION_INTERVAL_SECONDS", 3600)
# How often Celery beat compares the judge in force with the judge each anchor set (a test-set
# version marked as anchors, docs/repeats.md) was last judged by, starting a check when they differ.
# Each check costs one judge call per anchored verdict, and only when the judge changed.
EVALSITE_ANCHORS_INTERVAL_SECONDS = env_int("EVALSITE_ANCHORS_INTERVAL_SECONDS", 300)
# PostgreSQL: how many trace ids one partition of the tool calls covers (apps.traces.partitions).
# Retention returns a partition's disk space once every trace in it has expired: smaller partitions
# return space sooner, more of them cost the planner a little on every tool call query.
EVALSITE_TOOLCALL_PARTITION_TRACES = env_int("EVALSITE_TOOLCALL_PARTITION_TRACES", 100_000)
if EVALSITE_TOOLCALL_PARTITION_TRACES < 1:
    raise ImproperlyConfigured("EVALSITE_TOOLCALL_PARTITION_TRACES must be at least 1")
# PostgreSQL: how many agentic (or RAG) evaluation ids one partition of their Score rows covers
# (apps.scores.partitions), on the same terms.
EVALSITE_SCORE_PARTITION_SUBJECTS = env_int("EVALSITE_SCORE_PARTITION_SUBJECTS", 100_000)
if EVALSITE_SCORE_PARTITION_SUBJECTS < 1:
    raise ImproperlyConfigured("EVALSITE_SCORE_PARTITION_SUBJECTS must be at least 1")
# PostgreSQL: how many ids one partition of the agentic (or RAG) evaluations themselves covers. Ten
# times their Score rows': the evaluations are read by agent, session and date, which no partition
# bound prunes, so every partition costs each /history query its planning (bench/agentic.py at 1M
# rows: 13 partitions of 100,000 made a filtered page about 2 ms slower; 4 of 1,000,000 do not).
EVALSITE_EVALUATION_PARTITION_IDS = env_int("EVALSITE_EVALUATION_PARTITION_IDS", 1_000_000)
if EVALSITE_EVALUATION_PARTITION_IDS < 1:
    raise ImproperlyConfigured("EVALSITE_EVALUATION_PARTITION_IDS must be at least 1")
# PostgreSQL: how many trace ids one partition of the traces themselves covers (traces.0021). As wide
# as the evaluations', for the same reason: the trace list and the REST doors read traces by session,
# agent and time, which no partition bound prunes.
EVALSITE_TRACE_PARTITION_IDS = env_int("EVALSITE_TRACE_PARTITION_IDS", 1_000_000)
if EVALSITE_TRACE_PARTITION_IDS < 1:
    raise ImproperlyConfigured("EVALSITE_TRACE_PARTITION_IDS must be at least 1")
# How long dropping or attaching a partition waits for its lock before it gives up until the next
# pass, so ingestion never queues behind it for longer.
EVALSITE_PARTITION_LOCK_TIMEOUT_MS = env_int("EVALSITE_PARTITION_LOCK_TIMEOUT_MS", 200)

CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "fail-stale-traces": {"task": "apps.traces.tasks.fail_stale_traces", "schedule": 300.0},
    "reap-runs": {"task": "apps.runs.tasks.reap_runs", "schedule": 30.0},
    "prune-otlp-spans": {"task": "apps.traces.tasks.prune_otlp_spans", "schedule": 3600.0},
    "compact-ingestion-ledger": {"task": "apps.traces.tasks.compact_ingestion_ledger", "schedule": 600.0},
    "apply-retention": {
        "task": "apps.core.tasks.apply_retention",
        "schedule": float(EVALSITE_RETENTION_INTERVAL_SECONDS),
    },
    "watch-judge-anchors": {
        "task": "apps.runs.tasks.watch_anchors",
        "schedule": float(EVALSITE_ANCHORS_INTERVAL_SECONDS),
    },
    "ensure-partitions": {"task": "apps.traces.tasks.ensure_partitions", "schedule": 60.0},
    "settle-otlp-traces": {
        "task": "apps.traces.tasks.settle_otlp_traces",
        "schedule": float(EVALSITE_OTLP_SETTLE_INTERVAL_SECONDS),
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
