from django.conf import settings
from django.http import JsonResponse


class BodySizeLimitMiddleware:
    """Refuse bodies over EVALSITE_MAX_BODY_BYTES with 413 before any of it is read or parsed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.EVALSITE_MAX_BODY_BYTES
        raw_length = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw_length)
        except ValueError:
            return JsonResponse({"detail": "Invalid Content-Length header."}, status=400)
        if length > limit:
            return JsonResponse(
                {"detail": f"Request body too large: {length} bytes, the limit is {limit} bytes."}, status=413
            )
        return self.get_response(request)
