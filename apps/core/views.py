from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt


# A 404 changes nothing, so it needs no CSRF token: without this a POST to an unknown API path
# would get the CSRF failure page (HTML 403) instead of the JSON 404.
@csrf_exempt
def api_not_found(request, rest=""):
    return JsonResponse({"detail": f"No API endpoint at {request.path}"}, status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    from django.views.defaults import server_error as html_server_error

    return html_server_error(request)
