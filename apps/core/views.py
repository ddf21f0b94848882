from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt


# Exempt: nothing exists at these paths to protect, and a browser session's POST to one must get
# the JSON 404 like any other client, not Django's HTML CSRF page.
@csrf_exempt
def api_not_found(request, rest=""):
    return JsonResponse({"detail": f"No API endpoint at {request.path}"}, status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    from django.views.defaults import server_error as html_server_error

    return html_server_error(request)
