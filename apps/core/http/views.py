import logging

from django.contrib.auth.views import redirect_to_login
from django.db import connections
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found as html_page_not_found
from django.views.defaults import server_error as html_server_error
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework import exceptions

from apps.core.http.middleware import is_api_path
from evalsite.celery import app as celery_app

logger = logging.getLogger(__name__)

# Probes come every few seconds from each load balancer; a dead broker must fail fast, not hold a
# web thread for kombu's default retry schedule.
READINESS_TIMEOUT_SECONDS = 2


# A 404 changes nothing, so it needs no CSRF token: without this a POST to an unknown API path
# would get the CSRF failure page (HTML 403) instead of the JSON 404.
@csrf_exempt
def api_not_found(request, rest=""):
    return JsonResponse({"detail": f"No API endpoint at {request.path}"}, status=404)


def not_found(request, exception=None):
    """Django's 404 handler: an API path answers JSON, whatever URL pattern did or did not match
    (`api/<path:rest>` misses a path with a line break); a page gets the HTML 404."""
    if is_api_path(request.path):
        return api_not_found(request)
    return html_page_not_found(request, exception)


def server_error(request):
    if is_api_path(request.path):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return html_server_error(request)


class ApiSchemaView(SpectacularAPIView):
    """The OpenAPI document: reading it is reading the API, so it needs the `read` scope."""

    required_scopes = {"GET": "read"}


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI under the schema's own access rule. A browser that is not logged in is sent to
    the login page rather than shown a bare 401, and comes back here afterwards."""

    required_scopes = {"GET": "read"}

    def handle_exception(self, exc):
        refused = (exceptions.NotAuthenticated, exceptions.AuthenticationFailed, exceptions.PermissionDenied)
        if isinstance(exc, refused) and not self.request.user.is_authenticated:
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)


@never_cache
def healthz(request):
    """Liveness: the process answers. Touches nothing else, so a database outage does not make a
    load balancer restart every web process at once."""
    return JsonResponse({"status": "ok"})


def _database_ready() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker_ready() -> None:
    with celery_app.connection_for_write(connect_timeout=READINESS_TIMEOUT_SECONDS) as connection:
        connection.ensure_connection(
            max_retries=1, interval_start=0, interval_step=0, timeout=READINESS_TIMEOUT_SECONDS
        )


READINESS_CHECKS = {"database": _database_ready, "broker": _broker_ready}


@never_cache
def readyz(request):
    """Readiness: the database and the Celery broker are reachable. 503 names the one that is not;
    the reason (which may hold a host name) goes to the log, not to anonymous callers."""
    checks = {}
    for name, check in READINESS_CHECKS.items():
        try:
            check()
        except Exception as exc:
            logger.warning("readiness: %s unreachable", name, exc_info=True)
            checks[name] = f"unreachable ({type(exc).__name__})"
        else:
            checks[name] = "ok"
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)
