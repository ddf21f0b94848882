from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from drf_spectacular.views import SpectacularSwaggerView
from rest_framework import exceptions


def api_not_found(request, rest=""):
    return JsonResponse({"detail": f"No API endpoint at {request.path}"}, status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    from django.views.defaults import server_error as html_server_error

    return html_server_error(request)


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI under the schema's own access rule. A browser that is not logged in is sent to
    the login page rather than shown a bare 401, and comes back here afterwards."""

    def handle_exception(self, exc):
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed, exceptions.PermissionDenied)) \
                and not self.request.user.is_authenticated:
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)
