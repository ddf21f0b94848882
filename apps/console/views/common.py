"""What every console view module needs: the same refusals the API gives, in the console's terms."""

from django.http import Http404, HttpResponseForbidden

from apps.core.errors import NotFoundError
from apps.core.permissions import scopes_of


def lacks_scope(request, scope: str):
    """The console refuses what the API would refuse the same user (apps.core.permissions): a 403
    to return, or None when the user holds the scope."""
    if scope in scopes_of(request):
        return None
    return HttpResponseForbidden(f"Your account lacks the '{scope}' scope.")


def found_or_404(read, /, *args, **kwargs):
    """read(*args, **kwargs), a selector or service that raises NotFoundError for an unknown id,
    with that error as the console's 404 page."""
    try:
        return read(*args, **kwargs)
    except NotFoundError as exc:
        raise Http404(exc.detail) from exc
