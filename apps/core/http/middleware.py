from django.conf import settings
from django.http import HttpResponseBadRequest, HttpResponseNotFound, JsonResponse

from apps.core.llm.usage import usage_scope

# The TRACE contract fixes its own path outside /api/; its clients expect the API's JSON errors there.
_API_PATHS_OUTSIDE_API = frozenset({"/trace", "/v1/traces"})


def is_api_path(path: str) -> bool:
    """Whether `path` belongs to the REST API (JSON errors) rather than to the pages."""
    return path.startswith("/api/") or path in _API_PATHS_OUTSIDE_API


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


_URLENCODED, _MULTIPART = "application/x-www-form-urlencoded", "multipart/form-data"


class NulCharacterMiddleware:
    """Refuse a NUL (%00) in the path, the query string or a form before any view turns it into a query.

    PostgreSQL cannot hold a NUL in text, so psycopg raises on any lookup that carries one and
    every id and filter in the project would answer 500. No id contains a NUL, so such a path is
    404; a query parameter or form field is 422 under /api/ (the shape of a validation error) and 400
    elsewhere."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        is_api = is_api_path(request.path_info)
        if "\x00" in request.path_info:
            if is_api:
                return JsonResponse({"detail": "Not found."}, status=404)
            return HttpResponseNotFound("Not found.", content_type="text/plain")
        query_string = request.META.get("QUERY_STRING", "")
        if "%00" in query_string or "\x00" in query_string:
            refused = self._refuse(request.GET, "query", is_api)
            if refused:
                return refused
        # Forms (console, admin) are checked too: a view that reads request.POST directly would
        # pass the NUL on. JSON bodies are the validation layer's (apps/core/api/validation.py).
        # Multipart only off the API: parsing it here consumes the stream, and API views that read
        # request.body raw (test set import) still need it; DRF parses API forms itself.
        if request.method == "POST" and (
            request.content_type == _URLENCODED or (request.content_type == _MULTIPART and not is_api)
        ):
            refused = self._refuse(request.POST, "body", is_api)
            if refused:
                return refused
        return self.get_response(request)

    @staticmethod
    def _refuse(params, where: str, is_api: bool):
        name = next((key for key, values in params.lists() if "\x00" in key or any("\x00" in v for v in values)), None)
        if name is None:
            return None
        if is_api:
            return JsonResponse(
                {
                    "detail": [
                        {
                            "loc": [where, name.replace("\x00", "\\u0000")],
                            "msg": "contains a NUL character (\\u0000), which cannot be stored",
                            "type": "value_error",
                        }
                    ]
                },
                status=422,
            )
        return HttpResponseBadRequest(
            f"A {'query parameter' if where == 'query' else 'form field'} contains a NUL character.",
            content_type="text/plain",
        )


class LLMUsageMiddleware:
    """Give every request its LLM usage meter (apps/core/llm/usage.py), written when the request ends."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with usage_scope():
            return self.get_response(request)
