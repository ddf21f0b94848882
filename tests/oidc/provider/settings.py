"""A real OpenID provider for the SSO tests: django-oidc-provider in its own small Django project,
run as a separate process (serve.py) with its own SQLite file. Nothing of evalsite is loaded here."""

import os

BASE_DIR = os.path.dirname(os.path.abspath(__file__))
SECRET_KEY = "test-provider-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.oidc.provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [os.path.join(BASE_DIR, "templates")],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["OIDC_PROVIDER_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# evalsite's test server is on the same host (127.0.0.1, another port), and cookies ignore ports:
# with the default names the two sites would overwrite each other's session and CSRF cookies.
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"
LOGIN_URL = "/accounts/login/"
SITE_URL = os.environ["OIDC_PROVIDER_SITE_URL"]
OIDC_EXTRA_SCOPE_CLAIMS = "tests.oidc.provider.claims.GroupsScopeClaims"
OIDC_USERINFO = "tests.oidc.provider.claims.userinfo"
OIDC_IDTOKEN_INCLUDE_CLAIMS = False
LOGGING = {"version": 1, "disable_existing_loggers": False}
